package session

import (
	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/decide"
)

// The client's output: its writes (gnet's buffers on a plaintext port,
// tls.Conn on the TLS port; coalesced within a traffic event, coalesce.go),
// counted in its budget's shares; and the gateway's own answers, written
// in the order of the requests, behind the broker's answers owed before them.

func (cl *answers) write(b []byte) {
	var v [1][]byte
	if cl.client().batchClient(one(&v, b)) {
		return
	}
	if t := cl.auth.tls; t != nil {
		_ = t.rec.Write(b)
	} else {
		_ = cl.c.Write(b)
	}
	cl.syncOut()
}

// syncOut counts the client's unread bytes in its tenant's and the
// replica's shares (B2); a client with unread bytes is looked at again at
// each tick until it has read them.
func (cl *answers) syncOut() {
	if cl.budget.Tenant == nil || cl.closed {
		return
	}
	cl.budget.SyncOutbound(int64(cl.c.Queued()))
}

// writev writes one frame given as slices: one vectored write in clear, one
// TLS write (records coalesced) over TLS.
func (cl *answers) writev(bs [][]byte) {
	if cl.client().batchClient(bs) {
		return
	}
	if t := cl.auth.tls; t != nil {
		_ = t.rec.Writev(bs)
	} else {
		_ = cl.c.Writev(bs)
	}
	cl.syncOut()
}

// answerLocal writes (or queues behind the answers owed before it) one of
// the gateway's own answers to the handshake (ApiVersions, SASL), given as
// a whole frame. It returns the answer queued (nil: written now).
func (cl *answers) answerLocal(frame []byte) *decide.Pending {
	if cl.queue.Len() == 0 {
		cl.write(frame)
		return nil
	}
	p := cl.queue.Get()
	p.Key = handshakeAnswer
	// A recycled Pending: no throttle of a former request, nothing to count.
	p.Throttle, p.BrokerThrottle, p.Life = 0, 0, decide.Life{Counted: true}
	p.Local = append(p.Local[:0], frame...)
	cl.queue.Push(p)
	return p
}

// handshakeAnswer: the key of answerLocal's queued answers.
const handshakeAnswer = -1

// noteAnswer: an answer to a request of key was written to the client.
// One past the handshake makes the client answered.
func (cl *answers) noteAnswer(key int16) {
	switch key {
	case handshakeAnswer, codec.KeyApiVersions, codec.KeySASLHandshake, codec.KeySASLAuthenticate:
	default:
		cl.answered = true
	}
}

// answerPending writes the answer decide built in the session's Vec.
func (cl *answers) answerPending(p *decide.Pending) {
	sl := cl.sess.RW.Vec.Slices()
	if cl.queue.Len() == 0 {
		cl.writev(sl)
		cl.noteAnswer(p.Key)
		cl.client().auditor().requestDone(p)
		cl.client().quotas().answerThrottle(p)
		cl.queue.Put(p)
		return
	}
	p.Local = p.Local[:0]
	for _, s := range sl {
		p.Local = append(p.Local, s...)
	}
	cl.queue.Push(p)
}

// flushLocal writes the gateway's own answers now at the head of the queue.
func (cl *answers) flushLocal() {
	for !cl.closed {
		p := cl.queue.Front()
		if p == nil || len(p.Local) == 0 {
			return
		}
		cl.queue.Pop()
		cl.write(p.Local)
		cl.noteAnswer(p.Key)
		cl.client().auditor().requestDone(p)
		cl.client().quotas().answerThrottle(p)
		cl.queue.Put(p)
	}
}

// owe records a request forwarded: its answer is owed (queued, its bytes
// reserved, counted in flight), or, without one (acks=0), it only keeps
// its place for the answers behind it.
func (cl *answers) owe(p *decide.Pending) {
	if p.NoResponse {
		cl.queue.Put(p)
		return
	}
	cl.budget.Reserve(p.Reserve)
	cl.queue.Push(p)
	cl.lp.pending.Add(1)
}

// answerDone ends the head request p once its broker's answer is written:
// off the queue, its reservation released, counted and traced with the
// throttle its answer carried (requestDone), its throttle applied (the
// silence begins as the answer leaves), the local answers behind it
// written.
func (cl *answers) answerDone(p *decide.Pending) {
	cl.queue.Pop()
	cl.lp.pending.Add(-1)
	cl.budget.Release(p.Reserve)
	cl.client().auditor().requestDone(p)
	cl.client().quotas().answerThrottle(p)
	cl.queue.Put(p)
	cl.flushLocal()
	cl.client().quotas().quotaPause()
}
