// Package engine owns the sockets: one gnet engine serves every listener
// port, and each client connection's broker connection is enrolled on the
// same event loop, so that a connection pair's state needs no lock. It is
// the only package that imports gnet.
package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flexway/flexway/audit"
	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/engine/conn"
	"github.com/flexway/flexway/engine/signals"
	"github.com/flexway/flexway/quota"
	"github.com/flexway/flexway/relay"
	"github.com/flexway/flexway/upstream"
	"github.com/panjf2000/ants/v2"
	"github.com/panjf2000/gnet/v2"
)

// Engine is a running gateway.
type Engine struct {
	gnet.BuiltinEventEngine
	opts Options
	log  *slog.Logger

	snap      atomic.Pointer[configs.Snapshot]
	upstreams map[string]*upstream.Upstream
	versions  map[string]*decide.Versions // by cluster
	acc       *acceptor                   // the listener ports (max_connections, L3)
	addrs     []string
	// sameCluster: an upstream refused because an earlier one reaches the
	// same physical cluster under another prefix (U3) -> that earlier one.
	sameCluster map[string]string

	eng     gnet.Engine
	life    lifecycle        // its start and stop (Serve, Ready, Stop)
	pools   workerPools      // off the loops: authentication, TLS handshakes
	sec     listenerSecurity // the TLS port, the OAuth issuers
	loopsMu sync.Mutex
	loops   map[gnet.EventLoop]*loop

	bounds       connBounds // the connections and their bytes in flight (B1, B2)
	refusedLog   *signals.RateLimiter
	unmappedSeen sync.Map
	m            *signals.Set

	quotas     quotaState   // the tenants' quotas (budget_quota.go, quota.go)
	auditTrail *audit.Trail // O3 (audit.go)
	flow       conn.Stats   // the flow-control mechanism's counts (flow.go)
	fs         flowSeries   // the flow and splice series (flowseries.go)
	tune       tuning       // the flow's and the splice's bounds (options.go)
}

// lifecycle is the engine's start and stop, as Serve, Ready and Stop see them.
type lifecycle struct {
	started  chan error    // Serve's end: its error (nil: it returned without one)
	booted   chan struct{} // closed at the first tick: loops running, accepting
	bootOnce sync.Once
	stopped  chan struct{} // closed once Serve returned and closed what it held
	stopping atomic.Bool   // Stop began
}

// workerPools run, off the loops, the work that would block one.
type workerPools struct {
	auth *ants.Pool // authentication work
	// handshake: TLS handshakes wait on their clients: one worker each, as
	// many as unauthenticated connections may exist.
	handshake *ants.Pool
}

// listenerSecurity is what the listener authenticates with: the TLS port
// and its certificates, the OAuth issuers.
type listenerSecurity struct {
	tlsConfig *tls.Config                // nil without a TLS listener
	tlsPort   int                        // 0 without one
	oauth     atomic.Pointer[auth.OAuth] // nil without auth.issuers
}

// connBounds are the listener's bounds on the connections and on their
// bytes in flight, and what they count.
type connBounds struct {
	perIP   *connLimits    // max_connections_per_ip (B1)
	unauth  atomic.Int64   // unauthenticated connections open (max_unauthenticated_connections)
	replica *relay.Shared  // max_total_in_flight_bytes (B2)
	tenants *relay.Tenants // the tenants with connections (B1, B2)
}

// quotaState is the engine's side of the quotas: the day/month budgets of
// the policies (budget_quota.go) and the KIP-219 buckets (quota.go).
type quotaState struct {
	// counters is server.counters' shared store (quota/counters), nil
	// without one; own: opened here, closed when the engine stops.
	counters quota.Store
	own      bool
	log      *signals.RateLimiter // "kafka produce refused: the tenant's quota is spent"
	buckets  *quota.Registry      // the KIP-219 buckets (quota.go)
}

// portRoute says what a listener port serves.
type portRoute struct {
	cluster *configs.Cluster // nil on the TLS port until SNI says
	node    int32            // -1: the bootstrap
	tls     bool             // the TLS listener (routed by SNI)
}

// TLSPort returns the TLS listener's port (0 without one).
func (e *Engine) TLSPort() int { return e.sec.tlsPort }

// Addrs returns the listener addresses.
func (e *Engine) Addrs() []string { return e.addrs }

// Loops returns the number of event loops.
func (e *Engine) Loops() int { return e.opts.Loops }

// EmbeddedBrokers returns, for each embedded upstream, its brokers' addresses.
func (e *Engine) EmbeddedBrokers() map[string][]string {
	out := map[string][]string{}
	for name, u := range e.upstreams {
		if addrs := u.EmbeddedAddrs(); addrs != nil {
			out[name] = addrs
		}
	}
	return out
}

// Snapshot returns the configuration in force.
func (e *Engine) Snapshot() *configs.Snapshot { return e.snap.Load() }

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
		gnet.WithWriteBufferCap(e.opts.ReadBufferCap),
		gnet.WithTicker(true),
		gnet.WithLockOSThread(e.opts.lockLoops),
		gnet.WithReuseAddr(true),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithLogger(gnetLogger{e.log}),
	)
	e.closePaused() // the loops returned: the sockets they no longer held (conn.Loop.Stop)
	e.closePipes()
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
	err := e.eng.Stop(context.Background())
	<-e.life.stopped
	e.stopAudit(ctx)
	e.pools.auth.Release()
	e.pools.handshake.Release()
	return err
}

func (e *Engine) closeUpstreams() {
	for _, u := range e.upstreams {
		u.Close()
	}
}

// loopOf returns the engine's state of a gnet loop (created on first use).
func (e *Engine) loopOf(el gnet.EventLoop) *loop {
	e.loopsMu.Lock()
	defer e.loopsMu.Unlock()
	l := e.loops[el]
	if l == nil {
		l = &loop{el: el, tune: &e.tune, clients: map[*client]struct{}{}}
		l.fc = conn.NewLoop(el, e.guard, &e.flow)
		e.loops[el] = l
	}
	return l
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

// closePaused closes the sockets the loops no longer hold (detached by a
// pause) and tells their owners, as gnet does for its own connections when
// it stops. It runs once every loop has returned: nothing runs beside it.
func (e *Engine) closePaused() {
	e.loopsMu.Lock()
	loops := make([]*loop, 0, len(e.loops))
	for _, l := range e.loops {
		loops = append(loops, l)
	}
	e.loopsMu.Unlock()
	for _, l := range loops {
		l.fc.Stop()
	}
}
