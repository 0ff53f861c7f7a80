package engine

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/flexway/flexway/engine/signals"
	"github.com/panjf2000/gnet/v2"
)

// loop is the engine's state of one event loop; touched on that loop only,
// except pending (read by Stop).
type loop struct {
	el      gnet.EventLoop
	clients map[*client]struct{}
	held    []*client
	// unread: clients whose unread bytes are counted in the shares (B2)
	unread map[*client]struct{}
	// draining: broker connections of gone clients, closed once flushed
	draining []*upstreamConn
	// pauses: connections with a read pause under way (pause.go)
	pauses   pauseSet
	pending  atomic.Int64
	lastFull time.Time

	// muted: clients throttled by a quota until their time (quota.go)
	muted map[*client]struct{}
	// upFull: clients not read until their broker takes (flow.go)
	upFull map[*client]struct{}
	// out: the writes of the traffic event under way (coalesce.go)
	out batches
	// pp: the pipe the loop splices Produce records through
	// (produce_splice.go), nil until first used; ppFailed: uses left
	// before making one is tried again.
	pp       *loopPipe
	ppFailed int
}

// OnOpen implements gnet.EventHandler: a client connection the acceptor
// enrolled (its route in its context), or a broker connection enrolled for
// a client (its context set). Anything else came through gnet's own
// loopback listener and is closed.
func (e *Engine) OnOpen(c gnet.Conn) (out []byte, action gnet.Action) {
	defer e.recoverConn(c, "open")
	switch x := c.Context().(type) {
	case *upstreamConn:
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
		c.SetContext(cl)
		return nil, gnet.None
	case *pausedConn: // a paused connection enrolled again (pause.go)
		return x.reattached(c)
	}
	return nil, gnet.Close
}

// OnTraffic implements gnet.EventHandler.
func (e *Engine) OnTraffic(c gnet.Conn) gnet.Action {
	defer e.recoverConn(c, "traffic")
	switch x := c.Context().(type) {
	case *client:
		defer x.upstreamCheck() // after the flush below
		x.lp.out.begin()
		defer x.lp.out.end()
		x.onTraffic()
	case *upstreamConn:
		x.cl.lp.out.begin()
		defer x.cl.lp.out.end()
		x.onTraffic()
	case *pausedConn: // paused once: its owner's (pause.go)
		if o, ok := x.ctx.(interface{ onTraffic() }); ok {
			if cl, ok := x.ctx.(*client); ok {
				defer cl.upstreamCheck() // after the flush below
			}
			if lp := ownerLoop(x.ctx); lp != nil {
				lp.out.begin()
				defer lp.out.end()
			}
			o.onTraffic()
			return gnet.None
		}
		return gnet.Close
	default:
		return gnet.Close
	}
	return gnet.None
}

// OnClose implements gnet.EventHandler. It may run inside another
// connection's callback (a failed write closes at once): it only marks and
// releases, never writes.
func (e *Engine) OnClose(c gnet.Conn, err error) gnet.Action {
	defer e.recoverConn(nil, "close")
	ctx := c.Context()
	if p, ok := ctx.(*pausedConn); ok {
		if !p.liveClosed(c) {
			return gnet.None // the detach of a read pause: nothing ends (pause.go)
		}
		ctx = p.ctx
	}
	e.closed(ctx, err)
	return gnet.None
}

// closed releases the owner of a connection that ended: gnet's OnClose, or
// a paused connection's close (pause.go).
func (e *Engine) closed(ctx any, err error) {
	switch x := ctx.(type) {
	case *client:
		// Its place under max_connections is given back after the release
		// (the gauge never counts the next one before this one is gone),
		// and even if onClose panics.
		defer e.acc.free()
		x.onClose(err)
	case *acceptedConn:
		e.acc.free() // closed at its open (a bound refused it)
	case *upstreamConn:
		x.onClose(err)
	}
}

// OnTick implements gnet.EventHandler: it runs on its own goroutine, so it
// hands a sweep to each loop. gnet starts it once its loops run: the first
// tick starts accepting and makes the engine ready.
func (e *Engine) OnTick() (time.Duration, gnet.Action) {
	e.bootOnce.Do(func() {
		e.acc.start()
		close(e.booted)
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
			e.sweepPaused(l)
			e.sweepMuted(l)
			return nil
		}))
	}
	return sweepEvery, gnet.None
}

// recoverConn turns a panic in a callback into the close of that one
// connection, logged loudly with its stack: gnet has no recover of its own,
// and one panic would otherwise end every tenant's connections.
func (e *Engine) recoverConn(c gnet.Conn, where string) {
	r := recover()
	if r == nil {
		return
	}
	e.m.Panic()
	e.log.Error("kafka connection closed: internal error", "where", where, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	if c == nil {
		return
	}
	ctx := c.Context()
	if p, ok := ctx.(*pausedConn); ok {
		ctx = p.ctx
	}
	switch x := ctx.(type) {
	case *client:
		x.close(signals.CloseInternal)
	case *upstreamConn:
		x.cl.close(signals.CloseInternal)
	default:
		_ = c.Close()
	}
}
