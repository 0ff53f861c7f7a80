// Package engine owns the loops and their sockets: one gnet engine serves
// every listener port (the acceptor hands it the accepted sockets), its
// callbacks hand each socket's events to its session (engine/session), the
// tick sweeps each loop, and the stop's drain and a reload are fanned out
// to the loops. A client connection's broker connection is enrolled on
// the same loop, so that a pair's state needs no lock. gnet is imported
// here and by the rooms that work on its loops (engine/conn,
// engine/session).
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flexway/flexway/engine/session"

	"github.com/flexway/flexway/configs"
	"github.com/panjf2000/gnet/v2"
)

// Engine is a running gateway.
type Engine struct {
	gnet.BuiltinEventEngine
	opts Options
	log  *slog.Logger
	// env is what the sessions share (engine/session): the configuration
	// in force, the upstreams, the bounds, quotas and signals, the loops'
	// states.
	env   *session.Env
	acc   *acceptor // the listener ports (max_connections, L3)
	addrs []string  // the ports bound at start (Addrs): not updated by a reload

	eng  gnet.Engine
	life lifecycle // its start and stop (Serve, Ready, Stop)
}

// lifecycle is the engine's start and stop, as Serve, Ready and Stop see them.
type lifecycle struct {
	started  chan error    // Serve's end: its error (nil: it returned without one)
	booted   chan struct{} // closed at the first tick: loops running, accepting
	bootOnce sync.Once
	stopped  chan struct{} // closed once Serve returned and closed what it held
	stopping atomic.Bool   // Stop began
	halt     chan struct{} // closed when Stop begins: the ticker rests no more
	// loopsDone: the loops stop or stopped: no tick to wait for (StuckLoop)
	loopsDone atomic.Bool
}

// TLSPort returns the TLS listener's port (0 without one).
// writeBufferCap is gnet's write buffer (the engine's own queue takes what
// a socket does not: engine/conn).
const writeBufferCap = 256 << 10

func (e *Engine) TLSPort() int { return e.env.Sec.TLSPort }

// Addrs returns the listener addresses bound at start (New), and only
// those: a reload that adds or removes a cluster's ports leaves it as it
// was (the acceptor holds the ports in force). Only the start reads it:
// cmd/flexway's banner and its "flexway started" line, and gwprof's; no
// admin page shows listener addresses (/healthz, /config, the status page
// read the snapshot and the series in force).
func (e *Engine) Addrs() []string { return e.addrs }

// Loops returns the number of event loops.
func (e *Engine) Loops() int { return e.opts.Loops }

// EmbeddedBrokers returns, for each embedded upstream, its brokers' addresses.
func (e *Engine) EmbeddedBrokers() map[string][]string {
	out := map[string][]string{}
	for name, u := range e.env.Fleet().Upstreams {
		if addrs := u.EmbeddedAddrs(); addrs != nil {
			out[name] = addrs
		}
	}
	return out
}

// Snapshot returns the configuration in force.
func (e *Engine) Snapshot() *configs.Snapshot { return e.env.Snap.Load() }

// Serve listens and serves until Stop; it returns once the engine stopped.
// Ready is closed (or sent an error) once listening.
//
// The listener ports are the acceptor's (accept.go): gnet serves the
// connections it is handed, and listens itself only on a loopback port of
// its own (gnet refuses to run or stop an engine without a listener);
// whatever connects there is closed at once (OnOpen: no route).
func (e *Engine) Serve() error {
	if err := e.acc.listen(); err != nil {
		select {
		case e.life.started <- err:
		default:
		}
		e.closeUpstreams()
		e.closeCounters()
		close(e.life.stopped)
		return err
	}
	go e.reclaim(e.life.stopped) // reclaim.go: memory back to the OS after a burst
	err := gnet.Rotate(e, []string{"tcp://127.0.0.1:0"},
		gnet.WithMulticore(true),
		gnet.WithNumEventLoop(e.opts.Loops),
		gnet.WithLoadBalancing(gnet.LeastConnections),
		gnet.WithReadBufferCap(e.opts.ReadBufferCap),
		gnet.WithWriteBufferCap(writeBufferCap),
		gnet.WithTicker(true),
		gnet.WithLockOSThread(e.opts.lockLoops),
		gnet.WithReuseAddr(true),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithLogger(gnetLogger{e.log}),
	)
	e.life.loopsDone.Store(true)
	for _, l := range e.env.Loops() {
		l.Stop() // the loops returned: the sockets they no longer held, their pipes
	}
	e.acc.stop()
	select {
	case e.life.started <- err:
	default:
	}
	e.closeUpstreams()
	e.closeCounters()
	close(e.life.stopped)
	return err
}

// Ready waits until the engine listens (nil) or failed to.
func (e *Engine) Ready(ctx context.Context) error {
	select {
	case err := <-e.life.started:
		if err == nil {
			return errors.New("engine stopped")
		}
		return err
	case <-e.life.booted:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// OnBoot implements gnet.EventHandler. gnet starts its loops after it:
// accepting starts at the first tick (handler.go).
func (e *Engine) OnBoot(eng gnet.Engine) gnet.Action {
	e.eng = eng
	return gnet.None
}

// Stop drains and stops the engine (U4, drain.go): the listeners close,
// every request already read is forwarded and answered, each connection
// closes once nothing is owed to it; then the loops stop. The drain is
// bounded by ctx's deadline, else by server.shutdown_timeout, and ends
// when ctx does.
func (e *Engine) Stop(ctx context.Context) error {
	if !e.life.stopping.CompareAndSwap(false, true) {
		<-e.life.stopped
		return nil
	}
	close(e.life.halt) // the drain's loops tick every SweepEvery
	start := time.Now()
	// No new connection: the listeners close (connections still in the
	// kernel's queue are reset), then the drain.
	e.acc.stop()
	deadline := start.Add(e.shutdownTimeout())
	if d, ok := ctx.Deadline(); ok {
		deadline = d
	}
	conns := e.drain(ctx, deadline)
	if conns > 0 {
		reqs := e.inFlight()
		cause := "the drain's time is up"
		if time.Now().Before(deadline) {
			cause = "the stop was hastened"
		}
		e.log.Warn("flexway stopping: connections closed with requests in flight", "cause", cause,
			"connections", conns, "requests", reqs, "after", time.Since(start).Round(time.Millisecond).String())
	} else {
		e.log.Info("flexway drained: every request read was answered", "after", time.Since(start).Round(time.Millisecond).String())
	}
	e.life.loopsDone.Store(true)
	err := e.eng.Stop(context.Background())
	<-e.life.stopped
	e.env.StopAudit(ctx)
	e.env.Pools.Auth.Release()
	e.env.Pools.Handshake.Release()
	return err
}

func (e *Engine) closeUpstreams() {
	for _, u := range e.env.Fleet().Upstreams {
		u.Close()
	}
}

// gnetLogger sends gnet's own logs to slog.
type gnetLogger struct{ l *slog.Logger }

func (g gnetLogger) Debugf(f string, a ...any) {}
func (g gnetLogger) Infof(f string, a ...any)  { g.l.Debug(fmt.Sprintf(f, a...)) }
func (g gnetLogger) Warnf(f string, a ...any) {
	if strings.Contains(f, "of a stale connection") {
		// An event gnet had queued for a socket the read pause (engine/conn)
		// took from it in the same batch: gnet drops it, nothing is lost.
		g.l.Debug(fmt.Sprintf(f, a...))
		return
	}
	g.l.Warn(fmt.Sprintf(f, a...))
}
func (g gnetLogger) Errorf(f string, a ...any) { g.l.Error(fmt.Sprintf(f, a...)) }
func (g gnetLogger) Fatalf(f string, a ...any) { g.l.Error(fmt.Sprintf(f, a...)) }
