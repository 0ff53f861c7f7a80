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
	"net"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flexway/flexway/audit"
	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/codec"
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

	eng       gnet.Engine
	pool      *ants.Pool // authentication work
	hsPool    *ants.Pool // TLS handshakes
	tlsConfig *tls.Config
	tlsPort   int
	oauth     atomic.Pointer[auth.OAuth] // nil without auth.issuers
	loopsMu   sync.Mutex
	loops     map[gnet.EventLoop]*loop
	started   chan error
	booted    chan struct{} // closed at the first tick: loops running, accepting
	bootOnce  sync.Once
	stopped   chan struct{}
	stopping  atomic.Bool

	// sameCluster: an upstream refused because an earlier one reaches the
	// same physical cluster under another prefix (U3) -> that earlier one.
	sameCluster map[string]string

	limits       *connLimits
	replica      *relay.Shared  // max_total_in_flight_bytes (B2)
	tenants      *relay.Tenants // the tenants with connections (B1, B2)
	refusedLog   *signals.RateLimiter
	unmappedSeen sync.Map
	m            *signals.Set
	unauth       atomic.Int64

	// counters is server.counters' shared store (quota/counters), nil
	// without one; ownCounters: opened here, closed when the engine stops.
	counters    quota.Store
	ownCounters bool
	quotaLog    *signals.RateLimiter // "kafka produce refused: the tenant's quota is spent"
	auditTrail  *audit.Trail         // O3 (audit.go)
	quotas      *quota.Registry      // the KIP-219 buckets (quota.go)
	flow        conn.Stats           // the flow-control mechanism's counts (flow.go)
	fs          flowSeries           // the flow and splice series (flowseries.go)
	tune        tuning               // the flow's and the splice's bounds (options.go)
}

// portRoute says what a listener port serves.
type portRoute struct {
	cluster *configs.Cluster // nil on the TLS port until SNI says
	node    int32            // -1: the bootstrap
	tls     bool             // the TLS listener (routed by SNI)
}

// New prepares an engine for snap: it starts the embedded upstreams and
// reads every upstream's brokers and versions. Serve starts listening.
func New(ctx context.Context, snap *configs.Snapshot, opt ...Option) (*Engine, error) {
	e := &Engine{
		upstreams: map[string]*upstream.Upstream{},
		versions:  map[string]*decide.Versions{},
		loops:     map[gnet.EventLoop]*loop{},
		started:   make(chan error, 1),
		booted:    make(chan struct{}),
		stopped:   make(chan struct{}),
	}
	e.opts = Options{WriteTimeout: 30 * time.Second, ReadBufferCap: 256 << 10, AuthWorkers: 64,
		FlowHigh: 1 << 20, FlowLow: 256 << 10, StreamMin: codec.MaxStreamUnit,
		FetchSpliceMin: 64 << 10, ProduceSpliceMin: 64 << 10}
	for _, o := range opt {
		o(&e.opts)
	}
	e.tune.set(&e.opts)
	if e.opts.Logger == nil {
		e.opts.Logger = slog.Default()
	}
	if e.opts.Loops <= 0 {
		e.opts.Loops = defaultLoops(runtime.GOMAXPROCS(0))
	}
	e.log = e.opts.Logger
	e.refusedLog = signals.NewRateLimiter(signals.RefusalsPerSecond)
	l := snap.Listener
	if l == nil || (l.Plaintext == nil && l.TLS == nil) {
		return nil, fmt.Errorf("%w: listeners.kafka declares neither tls nor plaintext", ErrEngineConfig)
	}
	if l.TLS != nil {
		cfg, err := buildServerTLS(l)
		if err != nil {
			return nil, err
		}
		e.tlsConfig = cfg
	}
	e.snap.Store(snap)
	e.m = signals.New(snap)
	e.fs = newFlowSeries(e.m.Metrics(), &e.flow)
	maxConns := l.MaxConnections
	if maxConns <= 0 {
		maxConns = configs.DefaultMaxConnections
	}
	e.acc = newAcceptor(e, maxConns)
	e.limits = newConnLimits()
	e.replica = &relay.Shared{Limit: int64(l.MaxTotalInFlightBytes)}
	e.tenants = relay.NewTenants(int64(l.MaxTenantInFlightBytes))
	if len(snap.File.Auth.Issuers) > 0 {
		v, err := auth.NewOAuth(ctx, snap)
		if err != nil {
			return nil, err
		}
		e.oauth.Store(v)
	}

	// Upstreams: only those that serve a cluster, in the order of their
	// names (the later of two that reach one physical cluster is refused, U3).
	for _, name := range servedUpstreams(snap) {
		cfg := snap.Upstreams[name]
		if cfg == nil {
			return nil, fmt.Errorf("%w: no upstream %q", ErrEngineConfig, name)
		}
		u, err := upstream.Start(ctx, name, cfg, seedTopics(snap, name))
		if err != nil {
			e.closeUpstreams()
			return nil, fmt.Errorf("%w: %w", ErrEngineUpstream, err)
		}
		e.upstreams[name] = u
		e.checkPhysicalCluster(snap, name)
	}
	for _, cl := range snap.Clusters {
		e.versions[cl.Name] = decide.NewVersions(e.upstreams[cl.Upstream].Versions())
	}

	// The TLS port, routed by SNI.
	if l.TLS != nil {
		th, tp, err := net.SplitHostPort(l.Address)
		if err != nil {
			e.closeUpstreams()
			return nil, fmt.Errorf("%w: listeners.kafka.address: %v", ErrEngineConfig, err)
		}
		port, _ := strconv.Atoi(tp)
		if th == "" {
			th = "0.0.0.0"
		}
		// Port 0 (tests): bound now, so that the route is known.
		if port, err = e.acc.add(th, port, portRoute{node: -1, tls: true}); err != nil {
			e.closeUpstreams()
			return nil, err
		}
		e.tlsPort = port
		e.addrs = append(e.addrs, "tcp://"+net.JoinHostPort(th, strconv.Itoa(port)))
	}
	// Listener ports: the fallback range of each cluster.
	var names []string
	host := "0.0.0.0"
	if l.Plaintext != nil {
		if l.Plaintext.BindHost != "" {
			host = l.Plaintext.BindHost
		}
		for name := range l.Plaintext.Clusters {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		pc := l.Plaintext.Clusters[name]
		cl := snap.Clusters[name]
		if cl == nil {
			continue // refused at load; kept safe here
		}
		for port := pc.Ports.From; port <= pc.Ports.To; port++ {
			node := int32(-1)
			if port > pc.Ports.From {
				node = pc.FirstNodeID + int32(port-pc.Ports.From-1)
			}
			if _, err := e.acc.add(host, port, portRoute{cluster: cl, node: node}); err != nil {
				e.acc.stop()
				e.closeUpstreams()
				return nil, err
			}
			e.addrs = append(e.addrs, "tcp://"+net.JoinHostPort(host, strconv.Itoa(port)))
		}
	}
	pool, err := ants.NewPool(e.opts.AuthWorkers, ants.WithNonblocking(true))
	if err != nil {
		e.acc.stop()
		e.closeUpstreams()
		return nil, err
	}
	e.pool = pool
	// TLS handshakes wait on their clients: one worker each, as many as
	// unauthenticated connections may exist.
	hs, err := ants.NewPool(max(l.UnauthenticatedConnections(), 16), ants.WithNonblocking(true))
	if err != nil {
		e.acc.stop()
		e.pool.Release()
		e.closeUpstreams()
		return nil, err
	}
	e.hsPool = hs
	if err := e.openCounters(snap); err != nil {
		e.acc.stop()
		e.pool.Release()
		e.hsPool.Release()
		e.closeUpstreams()
		return nil, err
	}
	// The KIP-219 buckets: a tenant's spending shared through
	// server.counters when there is one (quota.Running counters).
	e.quotas = quota.NewRegistry(e.counters, nil)
	e.startAudit()
	return e, nil
}

// seedTopics lists the physical topics the embedded upstream creates: every
// served channel of the upstream, for every tenant named by a key or a
// client certificate.
func seedTopics(snap *configs.Snapshot, name string) []string {
	cfg := snap.Upstreams[name]
	if cfg == nil || cfg.Embedded == nil || (cfg.Embedded.SeedTopics != nil && !*cfg.Embedded.SeedTopics) {
		return nil
	}
	tenants := map[string]bool{}
	for _, k := range snap.Keys {
		tenants[k.Tenant] = true
	}
	for _, c := range snap.Clients {
		tenants[c.Tenant] = true
	}
	seen := map[string]bool{}
	var out []string
	for _, cl := range snap.Clusters {
		if cl.Upstream != name {
			continue
		}
		for name := range cl.Topics {
			for t := range tenants {
				if !configs.ValidTenant(t) {
					continue
				}
				p := cl.Prefix + t + "." + name
				if !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// TLSPort returns the TLS listener's port (0 without one).
func (e *Engine) TLSPort() int { return e.tlsPort }

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
		case e.started <- err:
		default:
		}
		e.closeUpstreams()
		e.closeCounters()
		close(e.stopped)
		return err
	}
	go e.reclaim(e.stopped) // reclaim.go: memory back to the OS after a burst
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
	case e.started <- err:
	default:
	}
	e.closeUpstreams()
	e.closeCounters()
	close(e.stopped)
	return err
}

// Ready waits until the engine listens (nil) or failed to.
func (e *Engine) Ready(ctx context.Context) error {
	select {
	case err := <-e.started:
		if err == nil {
			return errors.New("engine stopped")
		}
		return err
	case <-e.booted:
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
	if !e.stopping.CompareAndSwap(false, true) {
		<-e.stopped
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
	<-e.stopped
	e.stopAudit(ctx)
	e.pool.Release()
	e.hsPool.Release()
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
		// An event gnet had queued for a socket the read pause (pause.go)
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
