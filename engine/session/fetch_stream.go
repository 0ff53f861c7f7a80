package session

// A large Fetch answer relayed to its client as it arrives (cut-through,
// invariant 21), the reverse of produce_stream.go: begun at its head when
// it answers a Fetch longer than StreamMin, fed from the broker
// connection's buffer (rewritten, written to the client, released), its
// records spliced from the broker's socket to the client's where both are
// in clear text (fetch_splice.go). The quota's spending of the answer
// (consumer_byte_rate, quotaAnswer) is done at its head, for its whole
// size, before its first byte goes.

import (
	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/engine/signals"
	"github.com/flexway/flexway/relay"
)

// begin starts relaying the answer of size bytes at the head of the buffer
// as it arrives, if it answers a Fetch; false: it waits until it is whole
// (another API), or the client was closed.
func (u *upstreamConn) begin(size int32) bool {
	cl := u.cl
	hb, _ := u.peek(codec.SizeLen + 4)
	corr, _ := codec.ResponseCorrelation(hb[codec.SizeLen:])
	p, bad := cl.queue.Match(corr)
	if bad != relay.Matched {
		cl.close(signals.CloseAnswerOutOfOrder, "cluster", cl.route.Cluster.Name, "cause", bad.String())
		return false
	}
	if p.Key != codec.KeyFetch {
		return false
	}
	cl.quotas().quotaAnswer(p, codec.SizeLen+int(size))
	fs, err := cl.sess.FetchStream(p, int(size))
	if err != nil {
		cl.close(signals.CloseAnswerMalformed, "cluster", cl.route.Cluster.Name, "api", p.Key, "error", err.Error())
		return false
	}
	u.discard(codec.SizeLen)
	u.fs, u.fp, u.carry = fs, p, 0
	return true
}

// feed relays what the buffer holds of the streamed answer: rewritten,
// written to the client, then released. false: more bytes are needed, or
// the client was closed. A Feed error closes the client: its answer may
// be partly written.
func (u *upstreamConn) feed() bool {
	cl := u.cl
	want := min(u.buffered(), u.fs.Remaining())
	if want == 0 && u.fs.Remaining() > 0 { // 0 left: the answer's own last bytes (after a splice)
		return false
	}
	lim := want
	if u.carry > 0 {
		lim = min(want, u.carry+streamPeek)
	}
	for {
		chunk, _ := u.peek(lim)
		used, err := u.fs.Feed(chunk)
		if err != nil {
			u.fs, u.fp = nil, nil
			cl.close(signals.CloseAnswerMalformed, "cluster", cl.route.Cluster.Name, "api", codec.KeyFetch, "error", err.Error())
			return false
		}
		if sl := u.fs.Slices(); len(sl) > 0 {
			cl.answers().writev(sl)
		}
		if used > 0 { // gnet's Discard(0) discards everything
			u.discard(used)
			cl.ts.Fetched(used)
		}
		if cl.closed {
			return false
		}
		if !u.fs.Done() && u.buffered() == 0 && u.spliceFetch() {
			// The records (and the units between them) still in the
			// socket went to the client without the loop's buffer.
			if cl.closed || u.fs == nil {
				return false
			}
			u.carry = 0
			if !u.fs.Done() {
				return true // feed again: the answer's own last bytes, or wait for the socket
			}
		}
		if u.fs.Done() {
			p := u.fp
			p.BrokerThrottle = u.fs.BrokerThrottle()
			u.fs, u.fp, u.carry = nil, nil, 0
			cl.answers().noteAnswer(p.Key)
			cl.answers().answerDone(p)
			return true
		}
		if used > 0 { // feed again: the buffer may hold more
			u.carry = len(chunk) - used
			return true
		}
		if lim == want { // a unit not yet whole: wait for the socket
			u.carry = want
			return false
		}
		lim = min(want, 2*lim)
	}
}
