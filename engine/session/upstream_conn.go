package session

import (
	"context"
	"errors"
	"strconv"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/engine/conn"
	"github.com/flexway/flexway/engine/looptls"
	"github.com/flexway/flexway/engine/signals"
	"github.com/flexway/flexway/relay"
	"github.com/flexway/flexway/upstream"
	"github.com/panjf2000/gnet/v2"
)

// upstreamConn is a client's own broker connection (U2: a Kafka session —
// idempotence, transactions, broker throttling — is never shared). It is
// enrolled on the client's loop, so both sides are handled by one goroutine.
type upstreamConn struct {
	cl     *Client
	c      *conn.Conn      // its socket (engine/conn): set in OnOpen
	rec    *looptls.Record // its record layer under TLS, nil in clear text
	closed bool
	ready  bool
	// draining: the client is gone; its last requests are forwarded, then
	// the connection closes once flushed (see client.keepForDrain).
	draining   bool
	drainSince instant
	// fs relays the Fetch answer fp as it arrives (nil: none under way);
	// carry is what the last Feed left unconsumed (a unit not yet whole),
	// which gnet keeps in its ring between reads.
	fs    *codec.FetchResponseStream
	fp    *decide.Pending
	carry int
	// flowSince: paused until the client reads (conn.PeerFull, flow.go) since then
	flowSince instant
	// sec: TLS and SASL towards the broker (upstream_secure.go); nil
	// in clear text without SASL.
	sec *upSecure
}

// streamPeek bounds what is peeked past a unit left unconsumed: gnet keeps
// it in its ring, and a peek across the ring and the read buffer copies.
const streamPeek = 4 << 10

// dial opens the client's broker connection off the loop: the upstream's
// Dial blocks (with the upstream's timeout), then the socket is enrolled on
// the client's own loop. Frames wait in the client's buffer meanwhile.
func (cl *Client) dial() {
	u := cl.env.Upstream(cl.route.Cluster.Upstream)
	addr, ok := "", false
	if u != nil { // nil: a reload removed it; its clusters' connections are closing
		addr, ok = u.Addr(cl.route.Node)
	}
	if !ok {
		cl.close(signals.CloseUnknownBroker, "cluster", cl.route.Cluster.Name, "node", cl.route.Node)
		return
	}
	cl.up.state = upDialing
	up := &upstreamConn{cl: cl}
	cl.up.conn = up
	el := cl.c.EventLoop()
	broker := "bootstrap"
	if cl.route.Node >= 0 {
		broker = strconv.Itoa(int(cl.route.Node))
	}
	cluster := cl.route.Cluster.Name
	fail := func(err error) {
		why := signals.CloseDialFailed
		if !cl.env.Signals.Upstream(cluster, broker, false) {
			why = signals.CloseDialFailedAgain // the outage is logged once
		}
		_ = cl.lp.RunFor("dial", cl, func() {
			if cl.closed {
				return
			}
			if upstream.IsAuthError(err) {
				cl.upAuthFailed(err, "dial", "broker", broker)
				return
			}
			cl.close(why, "upstream", u.Name(), "cluster", cluster, "broker", broker, "error", err.Error())
		})
	}
	go func() {
		conn, err := u.Dial(context.Background(), addr)
		if err != nil {
			fail(err)
			return
		}
		// Read on the loop only after the enrollment below.
		up.sec = newUpSecure(conn, addr)
		nc := conn.Socket()
		ch, err := el.Enroll(gnet.NewContext(context.Background(), up), nc)
		if err != nil {
			_ = nc.Close()
			fail(err)
			return
		}
		if res := <-ch; res.Err != nil {
			fail(res.Err)
			return
		}
		cl.env.Signals.Upstream(cluster, broker, true)
	}()
}

// opened runs on the loop when the enrolled broker connection opens.
func (u *upstreamConn) opened(c gnet.Conn) {
	u.attach(c)
	if u.draining {
		u.ready = true
		u.drainOrphans()
		return
	}
	if u.cl.closed {
		u.closed = true
		u.c.Close()
		return
	}
	u.ready = true
	u.cl.up.state = upReady
	u.cl.flow().syncMarks()
	u.cl.process()
}

// write sends a frame to the broker.
func (u *upstreamConn) write(bs [][]byte) {
	if u.closed || u.batchBroker(bs) {
		return
	}
	u.send(bs)
}

// onTraffic matches each broker answer with the request at the head of
// the client's queue, by the correlation id the gateway gave it, rewrites
// it and writes it to the client at once (answers go back in order).
func (u *upstreamConn) onTraffic() {
	if u.authTraffic() { // a KIP-368 renewal's answers
		return
	}
	cl := u.cl
	if cl.closed {
		if u.draining { // answers to nobody
			u.buffered()
			u.discard(-1)
		}
		return
	}
	if hook := u.cl.env.Hooks.UpstreamRead.Load(); hook != nil {
		(*hook)(u.buffered())
	}
	maxResp := int32(cl.snap.Listener.MaxResponseBytes)
	for !cl.closed && !u.closed {
		if u.fs != nil {
			if !u.feed() && !u.readOn() {
				break
			}
			continue
		}
		n := u.buffered()
		if n < codec.SizeLen {
			if u.readOn() {
				continue
			}
			break
		}
		hb, _ := u.peek(codec.SizeLen)
		size := codec.FrameSize(hb)
		if size < 4 || size > maxResp {
			cl.close(signals.CloseAnswerTooLarge, "cluster", cl.route.Cluster.Name, "size", size, "max_response_bytes", maxResp)
			return
		}
		total := codec.SizeLen + int(size)
		if n < total {
			if int64(size) <= cl.env.Tune.StreamMin.Load() || n < codec.SizeLen+4 || !u.begin(size) {
				if u.readOn() {
					continue
				}
				break
			}
			continue
		}
		frame, _ := u.peek(total)
		frame = frame[codec.SizeLen:]
		corr, _ := codec.ResponseCorrelation(frame)
		p, bad := cl.queue.Match(corr)
		if bad != relay.Matched {
			cl.close(signals.CloseAnswerOutOfOrder, "cluster", cl.route.Cluster.Name, "cause", bad.String())
			return
		}
		cl.quotas().quotaAnswer(p, total)
		if err := cl.sess.Response(p, frame); err != nil {
			cl.close(signals.CloseAnswerMalformed, "cluster", cl.route.Cluster.Name, "api", p.Key, "error", err.Error())
			return
		}
		cl.answers().writev(cl.sess.RW.Vec.Slices())
		cl.answers().noteAnswer(p.Key)
		u.discard(total)
		if p.Key == codec.KeyFetch {
			cl.ts.Fetched(total)
		}
		if cl.closed {
			return
		}
		cl.answers().answerDone(p)
	}
	u.syncFetchMarks()
	if cl.wait.held {
		cl.resume()
	}
	u.renewIfIdle()
}

// drainOrphans forwards the Produce requests of a client that closed, then
// closes once the broker has been written to (or the sweep gives up).
func (u *upstreamConn) drainOrphans() {
	if u.sec != nil && u.sec.renewal >= renewExchange {
		return // after the renewal (renewed): its answers are on the wire
	}
	cl := u.cl
	buf := cl.drain.orphan
	cl.drain.orphan = nil
	if len(buf) > 0 && cl.sess != nil {
		// A drain may run within another client's event (its close, from
		// a write that failed), before that client's frame left the
		// loop's scratch: a gone client judges in memory of its own.
		cl.sess.Scratch = nil
	}
	for len(buf) >= codec.SizeLen && !u.closed {
		size := int(codec.FrameSize(buf))
		if size < 0 || size > len(buf)-codec.SizeLen {
			break
		}
		frame := buf[codec.SizeLen : codec.SizeLen+size]
		buf = buf[codec.SizeLen+size:]
		h, err := codec.ParseRequestHeader(frame)
		if err != nil || h.Key != codec.KeyProduce {
			continue
		}
		p := cl.queue.Get()
		if out := cl.sess.Request(&h, frame, cl.up.corr+1, 0, p); out == decide.Forward { // a Produce: no answer granted
			cl.up.corr++
			u.write(cl.sess.RW.Vec.Slices())
		}
		cl.queue.Put(p)
	}
	cl.flushOwn(true) // written before the flushed check
	u.closeIfFlushed(false)
}

// closeIfFlushed closes a draining connection once its writes are out;
// force gives up (the sweep, after the write timeout).
func (u *upstreamConn) closeIfFlushed(force bool) bool {
	if u.closed {
		return true
	}
	if !u.ready {
		return false
	}
	if force || u.c.Queued() == 0 {
		u.closed = true
		u.c.Close()
		return true
	}
	return false
}

// closeFromClient closes the broker side when the client goes.
func (u *upstreamConn) closeFromClient() {
	if u.closed {
		return
	}
	u.closed = true
	if u.c != nil {
		u.c.Close()
	}
}

// onClose: the broker closed (or the gateway did): the client goes too,
// it reconnects (its session cannot continue on another broker connection).
func (u *upstreamConn) onClose(err error) {
	wasClosed := u.closed
	u.closed = true
	if !wasClosed && !u.cl.closed {
		msg := "closed by the broker"
		if err != nil {
			msg = err.Error()
		}
		if u.sec != nil && u.sec.renewal >= renewExchange { // a refusal, by some brokers
			u.cl.upAuthFailed(errors.New(msg), "renewal")
			return
		}
		u.cl.close(signals.CloseBrokerClosed, "cluster", u.cl.route.Cluster.Name, "error", msg)
	}
}
