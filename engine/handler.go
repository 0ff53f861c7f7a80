package engine

import (
	"time"

	"github.com/flexway/flexway/engine/conn"
	"github.com/flexway/flexway/engine/session"
	"github.com/panjf2000/gnet/v2"
)

// OnOpen implements gnet.EventHandler: a client connection the acceptor
// enrolled (its route in its context), a broker connection enrolled for a
// client (its context set), or a paused socket enrolled again (its
// conn.Conn). Anything else came through gnet's own loopback listener and
// is closed.
func (e *Engine) OnOpen(c gnet.Conn) (out []byte, action gnet.Action) {
	defer e.recoverConn(c, "open")
	switch x := c.Context().(type) {
	case *acceptedConn:
		x.opened = true
		if e.env.ClusterGone(x.route) { // accepted on a port a reload is retiring
			e.env.RefusedLine("kafka connection refused", "cause", "the virtual cluster is no longer declared", "cluster", x.route.Cluster.Name)
			return nil, gnet.Close
		}
		if !e.env.Open(c, x.route) {
			// Refused for a bound (B1): reset, not closed in order, as a
			// transient cause before the first answer (invariant 43).
			_ = c.SetLinger(0)
			return nil, gnet.Close
		}
		return nil, gnet.None
	case *conn.Conn: // a paused socket enrolled again
		defer e.env.Series.LoopResume.UpdateDuration(time.Now())
		defer x.Loop().Settle()
		return nil, x.Reattached(c)
	}
	if session.Enrolled(c) {
		return nil, gnet.None
	}
	return nil, gnet.Close
}

// OnTraffic implements gnet.EventHandler: the owner of the socket reads,
// its writes batched; the pauses it asked are applied after
// (session.Traffic).
func (e *Engine) OnTraffic(c gnet.Conn) gnet.Action {
	defer e.recoverConn(c, "traffic")
	x, ok := c.Context().(*conn.Conn)
	if !ok || !session.Traffic(x) {
		return gnet.Close
	}
	return gnet.None
}

// OnClose implements gnet.EventHandler. It may run inside another
// connection's callback (a failed write closes at once): it only marks and
// releases, never writes.
func (e *Engine) OnClose(c gnet.Conn, err error) gnet.Action {
	defer e.recoverConn(nil, "close")
	switch x := c.Context().(type) {
	case *conn.Conn:
		x.GnetClosed(c, err) // the owner is told (Closed), unless a pause detached it
	case *acceptedConn:
		e.acc.free() // closed at its open (a bound refused it)
	default:
		session.EnrolledClosed(c, err) // a broker connection closed before its handle was made
	}
	return gnet.None
}

// OnTick implements gnet.EventHandler: it runs on its own goroutine, so it
// hands a sweep to each loop. gnet starts it once its loops run: the first
// tick starts accepting and makes the engine ready.
func (e *Engine) OnTick() (time.Duration, gnet.Action) {
	e.life.bootOnce.Do(func() {
		e.acc.start()
		close(e.life.booted)
	})
	for _, l := range e.env.Loops() {
		l.PostTick()
	}
	e.env.Rest(e.life.halt) // while every loop is quiet (session/rest.go)
	return session.SweepEvery, gnet.None
}

// recoverConn turns a panic in a callback into the close of that one
// connection (session.Env.Recovered). x is what the callback served.
func (e *Engine) recoverConn(x any, where string) { e.env.Recovered(recover(), x, where) }
