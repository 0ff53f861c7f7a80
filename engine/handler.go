package engine

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/flexway/flexway/engine/conn"
	"github.com/flexway/flexway/engine/signals"
	"github.com/flexway/flexway/engine/splice"
	"github.com/panjf2000/gnet/v2"
)

// loop is the engine's state of one event loop; touched on that loop only,
// except pending (read by Stop).
type loop struct {
	el      gnet.EventLoop
	fc      *conn.Loop // the flow-control mechanism's state of the loop (flow.go)
	tune    *tuning    // the engine's
	clients map[*client]struct{}
	held    []*client
	// draining: broker connections of gone clients, closed once flushed
	draining []*upstreamConn
	pending  atomic.Int64
	lastFull time.Time

	// muted: clients throttled by a quota until their time (quota.go)
	muted map[*client]struct{}
	// out: the writes of the traffic event under way (coalesce.go)
	out batches
	// pp: the pipe the loop splices records through (splice_pass.go),
	// nil until first used; ppFailed: uses left before making one is
	// tried again.
	pp       *splice.Pipe
	ppFailed int
}

// OnOpen implements gnet.EventHandler: a client connection the acceptor
// enrolled (its route in its context), a broker connection enrolled for a
// client (its context set), or a paused socket enrolled again (its
// conn.Conn). Anything else came through gnet's own loopback listener and
// is closed.
func (e *Engine) OnOpen(c gnet.Conn) (out []byte, action gnet.Action) {
	defer e.recoverConn(c, "open")
	switch x := c.Context().(type) {
	case *upstreamConn:
		defer x.cl.lp.fc.Settle()
		x.opened(c)
		return nil, gnet.None
	case *acceptedConn:
		x.opened = true
		cl := newClient(e, c, x.route)
		if cl == nil {
			// Refused for a bound (B1): reset, not closed in order, as a
			// transient cause before the first answer (invariant 43).
			_ = c.SetLinger(0)
			return nil, gnet.Close
		}
		high, low := e.marks()
		cl.c = conn.Open(cl.lp.fc, c, cl, high, low)
		return nil, gnet.None
	case *conn.Conn: // a paused socket enrolled again
		defer x.Loop().Settle()
		return nil, x.Reattached(c)
	}
	return nil, gnet.Close
}

// OnTraffic implements gnet.EventHandler: the owner of the socket reads,
// its writes batched; the pauses it asked are applied after (Settle).
func (e *Engine) OnTraffic(c gnet.Conn) gnet.Action {
	defer e.recoverConn(c, "traffic")
	x, ok := c.Context().(*conn.Conn)
	if !ok {
		return gnet.Close
	}
	lp := ownerLoop(x.Owner())
	if lp == nil {
		return gnet.Close
	}
	defer lp.fc.Settle() // after the flush below
	lp.out.begin()
	defer lp.out.end()
	x.Traffic()
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
	case *upstreamConn:
		x.onClose(err) // closed before its handle was made
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
	e.loopsMu.Lock()
	loops := make([]*loop, 0, len(e.loops))
	for _, l := range e.loops {
		loops = append(loops, l)
	}
	e.loopsMu.Unlock()
	for _, l := range loops {
		l := l
		_ = l.el.Execute(context.Background(), gnet.RunnableFunc(func(_ context.Context) error {
			defer e.recoverConn(nil, "sweep")
			e.sweep(l)
			e.sweepMuted(l)
			l.fc.Tick(time.Now()) // the pauses asked above are applied here
			return nil
		}))
	}
	return sweepEvery, gnet.None
}

// recoverConn turns a panic in a callback into the close of that one
// connection, logged loudly with its stack: gnet has no recover of its own,
// and one panic would otherwise end every tenant's connections. x is what
// the callback served: a gnet connection, a handle, a client or a broker
// connection (nil: none).
func (e *Engine) recoverConn(x any, where string) { e.recovered(recover(), x, where) }

// guard is the mechanism's guard around the tasks it runs on a loop
// (conn.NewLoop): recover is called by the deferred function itself.
func (e *Engine) guard(where string) { e.recovered(recover(), nil, where) }

func (e *Engine) recovered(r any, x any, where string) {
	if r == nil {
		return
	}
	e.m.Panic()
	e.log.Error("kafka connection closed: internal error", "where", where, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	gc, _ := x.(gnet.Conn)
	if gc != nil {
		x = gc.Context()
	}
	if c, ok := x.(*conn.Conn); ok {
		x = c.Owner()
	}
	switch o := x.(type) {
	case *client:
		o.close(signals.CloseInternal)
	case *upstreamConn:
		o.cl.close(signals.CloseInternal)
	default:
		if gc != nil {
			_ = gc.Close()
		}
	}
}
