package engine

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sort"
	"strconv"
	"time"

	"github.com/flexway/flexway/engine/session"

	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/quota"
	"github.com/flexway/flexway/upstream"
	"github.com/panjf2000/ants/v2"
)

// New and its steps: the options, what the listener authenticates with,
// the bounds, the upstreams, the listener ports, the worker pools, the
// quotas and the audit trail. A step that fails gives back what the ones
// before it took (undoNew).

// New prepares an engine for snap: it starts the embedded upstreams and
// reads every upstream's brokers and versions. Serve starts listening.
func New(ctx context.Context, snap *configs.Snapshot, opt ...Option) (_ *Engine, err error) {
	l := snap.Listener
	if l == nil || (l.Plaintext == nil && l.TLS == nil) {
		return nil, fmt.Errorf("%w: listeners.kafka declares neither tls nor plaintext", ErrEngineConfig)
	}
	e := newEngine(opt)
	if err := e.secure(ctx, snap); err != nil {
		return nil, err
	}
	e.env.Snap.Store(snap)
	e.env.StartSignals(snap)
	e.bound(l)
	defer func() {
		if err != nil {
			e.undoNew()
		}
	}()
	if err := e.startUpstreams(ctx, snap); err != nil {
		return nil, err
	}
	if err := e.addTLSPort(l); err != nil {
		return nil, err
	}
	if err := e.addClusterPorts(snap); err != nil {
		return nil, err
	}
	if err := e.startPools(l); err != nil {
		return nil, err
	}
	if err := e.openQuotas(snap); err != nil {
		return nil, err
	}
	e.env.StartAudit()
	return e, nil
}

// newEngine makes an engine of the options given, the defaults filling in
// the rest.
func newEngine(opt []Option) *Engine {
	e := &Engine{
		life: lifecycle{
			started: make(chan error, 1),
			booted:  make(chan struct{}),
			halt:    make(chan struct{}),
			stopped: make(chan struct{}),
		},
	}
	e.opts = Options{WriteTimeout: 30 * time.Second, ReadBufferCap: 16 << 10, ReadOnCap: 256 << 10, AuthWorkers: 64,
		FlowHigh: 1 << 20, FlowLow: 256 << 10, StreamMin: codec.MaxStreamUnit,
		FetchSpliceMin: 64 << 10, ProduceSpliceMin: 64 << 10}
	for _, o := range opt {
		o(&e.opts)
	}
	if e.opts.Logger == nil {
		e.opts.Logger = slog.Default()
	}
	if e.opts.Loops <= 0 {
		e.opts.Loops = defaultLoops(runtime.GOMAXPROCS(0))
	}
	e.log = e.opts.Logger
	e.env = session.NewEnv(e.log)
	e.opts.tune(&e.env.Tune)
	e.env.WriteTimeout = e.opts.WriteTimeout
	e.env.SessionLifetime = e.opts.SessionLifetime
	return e
}

// undoNew gives back what New took before a step failed: the listener
// ports bound, the worker pools, the upstreams started.
func (e *Engine) undoNew() {
	e.acc.stop()
	if e.env.Pools.Auth != nil {
		e.env.Pools.Auth.Release()
	}
	if e.env.Pools.Handshake != nil {
		e.env.Pools.Handshake.Release()
	}
	e.closeUpstreams()
}

// secure reads what the listener authenticates with: the TLS port's
// certificates, the OAuth issuers' keys.
func (e *Engine) secure(ctx context.Context, snap *configs.Snapshot) error {
	if l := snap.Listener; l.TLS != nil {
		cfg, err := buildServerTLS(l)
		if err != nil {
			return err
		}
		e.env.Sec.TLSConfig = cfg
	}
	if len(snap.File.Auth.Issuers) > 0 {
		v, err := auth.NewOAuth(ctx, snap)
		if err != nil {
			return err
		}
		e.env.Sec.OAuth.Store(v)
	}
	return nil
}

// bound sets the listener's bounds: on the connections (max_connections,
// the acceptor's, L3; per address, B1) and on the bytes in flight (B2).
func (e *Engine) bound(l *configs.KafkaListener) {
	maxConns := l.MaxConnections
	if maxConns <= 0 {
		maxConns = configs.DefaultMaxConnections
	}
	e.acc = newAcceptor(e, maxConns)
	e.env.FreeSlot = e.acc.free
	e.env.Bound(l)
}

// startUpstreams starts the upstreams that serve a cluster, in the order
// of their names (the later of two that reach one physical cluster is
// refused, U3), and reads each cluster's versions.
func (e *Engine) startUpstreams(ctx context.Context, snap *configs.Snapshot) error {
	f := session.NewFleet()
	defer func() { e.env.SetFleet(f) }() // what started, to be closed should a step fail
	for _, name := range servedUpstreams(snap) {
		u, err := startUpstream(ctx, snap, name)
		if err != nil {
			return err
		}
		f.Upstreams[name] = u
		if other := samePhysicalCluster(snap, f, name); other != "" {
			f.SameCluster[name] = other
			e.log.Error(session.MsgSameCluster, "upstream", name, "same_as", other, "cluster_id", u.ClusterID())
		}
	}
	setVersions(snap, f)
	return nil
}

// startUpstream starts upstream name of snap: its first connection reads
// its brokers, their versions and the physical cluster's id.
func startUpstream(ctx context.Context, snap *configs.Snapshot, name string) (*upstream.Upstream, error) {
	cfg := snap.Upstreams[name]
	if cfg == nil {
		return nil, fmt.Errorf("%w: no upstream %q", ErrEngineConfig, name)
	}
	u, err := upstream.Start(ctx, name, cfg, seedTopics(snap, name))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEngineUpstream, err)
	}
	return u, nil
}

// setVersions reads, for every cluster of snap, the versions of its
// upstream in f.
func setVersions(snap *configs.Snapshot, f *session.Fleet) {
	clear(f.Versions)
	for _, cl := range snap.Clusters {
		if u := f.Upstreams[cl.Upstream]; u != nil {
			f.Versions[cl.Name] = decide.NewVersions(u.Versions())
		}
	}
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

// addTLSPort declares the TLS port, routed by SNI.
func (e *Engine) addTLSPort(l *configs.KafkaListener) error {
	if l.TLS == nil {
		return nil
	}
	th, tp, err := net.SplitHostPort(l.Address)
	if err != nil {
		return fmt.Errorf("%w: listeners.kafka.address: %v", ErrEngineConfig, err)
	}
	port, _ := strconv.Atoi(tp)
	if th == "" {
		th = "0.0.0.0"
	}
	// Port 0 (tests): bound now, so that the route is known.
	if port, err = e.acc.add(th, port, session.Route{Node: -1, TLS: true}); err != nil {
		return err
	}
	e.env.Sec.TLSPort = port
	e.addrs = append(e.addrs, "tcp://"+net.JoinHostPort(th, strconv.Itoa(port)))
	return nil
}

// addClusterPorts declares the plaintext listener ports: the fallback
// range of each cluster (ports.go).
func (e *Engine) addClusterPorts(snap *configs.Snapshot) error {
	for _, p := range clusterPorts(snap, nil) {
		if _, err := e.acc.add(p.host, p.port, p.route); err != nil {
			return err
		}
		e.addrs = append(e.addrs, "tcp://"+net.JoinHostPort(p.host, strconv.Itoa(p.port)))
	}
	return nil
}

// startPools starts the worker pools: authentication's, and the TLS
// handshakes', which wait on their clients: one worker each, as many as
// unauthenticated connections may exist.
func (e *Engine) startPools(l *configs.KafkaListener) error {
	pool, err := ants.NewPool(e.opts.AuthWorkers, ants.WithNonblocking(true))
	if err != nil {
		return err
	}
	e.env.Pools.Auth = pool
	hs, err := ants.NewPool(max(l.UnauthenticatedConnections(), 16), ants.WithNonblocking(true))
	if err != nil {
		return err
	}
	e.env.Pools.Handshake = hs
	return nil
}

// openQuotas opens what the quotas count in: server.counters' shared
// store (counters.go), and the KIP-219 buckets, a tenant's spending shared
// through that store when there is one (quota.Running counters).
func (e *Engine) openQuotas(snap *configs.Snapshot) error {
	if err := e.openCounters(snap); err != nil {
		return err
	}
	e.env.Quotas.Buckets = quota.NewRegistry(e.env.Quotas.Counters, nil)
	e.env.Quotas.Buckets.Log = e.log
	return nil
}
