package session

import (
	"errors"
	"syscall"
	"time"

	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/engine/kernel"
	"github.com/flexway/flexway/engine/signals"
)

// A client's end: its close (a FIN, or a reset), and the release of what
// it holds, its broker connection kept to drain what the client sent
// before it closed its side.

// close closes the connection (and its broker connection) once, logged
// and counted as its cause says (signals.CloseCause); attrs are the line's
// key-value pairs.
func (cl *Client) close(why signals.CloseCause, attrs ...any) {
	if cl.closed {
		return
	}
	if why.Transient() && !cl.answered {
		_ = kernel.SetLinger(cl.c.Fd(), 0)
	}
	cl.env.closingFor(why, cl.ts, attrs)
	cl.flushOwn(false)
	cl.c.Close()
	cl.release()
}

// reset closes the connection as close does, but with a reset (RST,
// SO_LINGER 0): what its socket still holds is dropped.
func (cl *Client) reset(why signals.CloseCause, attrs ...any) {
	if cl.closed {
		return
	}
	_ = kernel.SetLinger(cl.c.Fd(), 0)
	cl.close(why, attrs...)
}

// release gives back everything the connection holds; idempotent.
// peerClosed: the client closed its side (not the gateway): the requests
// it sent before closing are still owed to the broker.
func (cl *Client) release() { cl.releaseAs(false) }

func (cl *Client) releaseAs(peerClosed bool) {
	if cl.closed {
		return
	}
	cl.flushOwn(true)
	cl.closed = true
	if cl.auth.tlsHS != nil {
		_ = cl.auth.tlsHS.Close()
	}
	delete(cl.lp.clients, cl)
	if cl.auth.state != stAuthed {
		cl.env.Bounds.Unauth.Add(-1)
	}
	if cl.ipCounted {
		cl.env.Bounds.perIP.dropIP(cl.ip)
	}
	n := 0
	cl.queue.Each(func(p *decide.Pending) {
		if len(p.Local) == 0 {
			n++
		}
		cl.auditor().requestDone(p) // never answered: counted, its span ended, at the close
	})
	cl.lp.pending.Add(-int64(n))
	cl.budget.Release(cl.budget.Reserved)
	cl.budget.SyncOutbound(0)
	cl.budget.SyncInbound(0)
	if cl.tenant != nil {
		cl.env.Bounds.Tenants.Release(cl.tenant, time.Now())
	}
	cl.quotas().quotaRelease()
	if cl.up.conn != nil {
		if peerClosed && cl.auth.state == stAuthed && cl.keepForDrain() {
			cl.env.Signals.ConnClosed(cl.ts, cl.connMech)
			return
		}
		cl.up.conn.closeFromClient()
	}
	cl.env.Signals.ConnClosed(cl.ts, cl.connMech)
}

// keepForDrain decides, at a client's own close, whether its broker
// connection must live on: requests it sent and the gateway read but did
// not forward yet (waiting for the dial or the budget — an acks=0 Produce
// has no answer to wait for, a client may close right after it), or
// requests forwarded but not yet flushed to the broker. A broker handles
// what it read; so does the gateway. Only Produce is forwarded then:
// nothing else has an effect without its answer.
func (cl *Client) keepForDrain() bool {
	if cl.producer().streamingProduce() {
		return false // the broker holds a part of a frame: it can only be closed
	}
	if cl.auth.tls != nil {
		cl.authn().tlsRead()
	}
	if n := cl.inBuffered(); n > 0 {
		if b, err := cl.peek(n); err == nil {
			cl.drain.orphan = append([]byte(nil), b...)
		}
	}
	u := cl.up.conn
	if len(cl.drain.orphan) == 0 && (u.c == nil || u.c.Queued() == 0) {
		return false
	}
	u.draining = true
	u.drainSince = nowInstant()
	cl.lp.draining = append(cl.lp.draining, u)
	if u.ready {
		u.drainOrphans()
	}
	return true
}

// onClose: the socket was closed under the gateway: the peer's close, or
// the kernel's reset of a peer that took nothing for KernelWriteTimeout
// (ETIMEDOUT), said as the write timeout's close (B3).
func (cl *Client) onClose(err error) {
	if !cl.closed && errors.Is(err, syscall.ETIMEDOUT) {
		cl.env.closingFor(signals.CloseWriteTimeout, cl.ts, []any{"after", cl.env.KernelWriteTimeout().String(), "by", "kernel"})
	}
	cl.releaseAs(true)
}
