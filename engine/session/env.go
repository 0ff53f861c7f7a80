package session

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flexway/flexway/audit"
	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine/conn"
	"github.com/flexway/flexway/engine/kernel"
	"github.com/flexway/flexway/engine/signals"
	"github.com/flexway/flexway/quota"
	"github.com/flexway/flexway/relay"
	"github.com/panjf2000/ants/v2"
	"github.com/panjf2000/gnet/v2"
)

// Env is what the sessions of one engine share: the configuration in
// force, the upstreams, the bounds and quotas they count against, the
// worker pools, the signals, the loops' states. The engine fills it at its
// start (engine.New); what changes later is atomic or read on the loops.
type Env struct {
	Log  *slog.Logger
	Snap atomic.Pointer[configs.Snapshot]
	// fleet: the upstreams in force, their versions by cluster, the U3
	// refusals (fleet.go); replaced whole at a reload.
	fleet atomic.Pointer[Fleet]

	// Tracer makes the request spans (trace.go); nil: none.
	Tracer *signals.Tracer

	Signals *signals.Set
	Series  Series       // the flow's and the splices' series (flowseries.go)
	Flow    conn.Stats   // the flow-control mechanism's counts
	Audit   *audit.Trail // O3 (audit.go)
	Bounds  Bounds
	Quotas  Quotas
	Pools   Pools
	Sec     Security
	Tune    Tuning

	WriteTimeout    time.Duration // B3
	SessionLifetime time.Duration // KIP-368 towards clients; 0: the issuer's
	// FreeSlot gives a listener's connection slot (max_connections) back
	// when a client is released.
	FreeSlot func()
	Hooks    Hooks

	views        views // the sessions' shared views (views.go)
	refusedLog   *signals.RateLimiter
	unmappedSeen sync.Map
	loopsMu      sync.Mutex
	loops        map[gnet.EventLoop]*Loop
	loopList     []*Loop // the loops in the order made (Loops), appended under loopsMu
	rest         rest    // the ticker at rest (rest.go)
}

// Route says what a listener port serves.
type Route struct {
	Cluster *configs.Cluster // nil on the TLS port until SNI says
	Node    int32            // -1: the bootstrap
	TLS     bool             // the TLS listener (routed by SNI)
}

// Bounds are the listener's bounds on the connections and on their bytes
// in flight, and what they count (B1, B2).
type Bounds struct {
	perIP   *connLimits   // max_connections_per_ip
	Unauth  atomic.Int64  // unauthenticated connections open (max_unauthenticated_connections)
	Replica *relay.Shared // max_total_in_flight_bytes
	// Requests: what clients sent that the gateway read and has not handled
	// yet, counted in the shares above as well (inbound.go); a gauge.
	Requests *relay.Shared
	Tenants  *relay.Tenants // the tenants with connections
}

// Quotas are the sessions' side of the quotas: the day/month budgets of
// the policies (budget_quota.go) and the KIP-219 buckets (quota.go).
type Quotas struct {
	// Counters is server.counters' shared store (quota/counters), nil
	// without one; Own: opened by the engine, closed when it stops.
	Counters quota.Store
	Own      bool
	Log      *signals.RateLimiter // "kafka produce refused: the tenant's quota is spent"
	Buckets  *quota.Registry
}

// Pools run, off the loops, the work that would block one.
type Pools struct {
	Auth *ants.Pool // authentication work
	// Handshake: TLS handshakes wait on their clients: one worker each, as
	// many as unauthenticated connections may exist.
	Handshake *ants.Pool
}

// Security is what the listener authenticates with.
type Security struct {
	TLSConfig *tls.Config                // nil without a TLS listener
	TLSPort   int                        // 0 without one
	OAuth     atomic.Pointer[auth.OAuth] // nil without auth.issuers
}

// Tuning is the flow's and the splices' bounds (the engine's options);
// atomic: tests change them on a running engine.
type Tuning struct {
	FlowHigh, FlowLow atomic.Int64 // a connection's write-queue marks
	StreamMin         atomic.Int64 // a frame above it is relayed as it arrives
	FetchSpliceMin    atomic.Int64 // record bytes of a partition spliced to a client
	ProduceSpliceMin  atomic.Int64 // record bytes of a partition spliced to a broker
	RoomBound         atomic.Bool  // passes bounded by the destination's room (tests turn it off)
	PipeShort         atomic.Bool  // tests: every pass meets a "full" destination (splice.Pipe.Short)
	// ReadFirst is gnet's read size, ReadOn the loops' read-on buffer (0:
	// none; conn.Loop.SetReadOn); set before the loops run.
	ReadFirst, ReadOn int
}

// Hooks are tests' views into the loops; nil in production.
type Hooks struct {
	Traffic      atomic.Pointer[func(cl *Client)]   // at each client traffic event
	UpstreamRead atomic.Pointer[func(buffered int)] // what a broker connection holds at each traffic event
	// Task: at each task posted to a loop (Loop.Run), inside its guard,
	// with its where and the connection it serves.
	Task atomic.Pointer[func(l *Loop, where string, x any)]
}

// NewEnv makes the shared state of an engine; the engine fills the rest.
func NewEnv(log *slog.Logger) *Env {
	env := &Env{
		Log:        log,
		refusedLog: signals.NewRateLimiter(signals.RefusalsPerSecond),
		loops:      map[gnet.EventLoop]*Loop{},
	}
	env.rest.wake = make(chan struct{}, 1)
	env.rest.most.Store(int64(IdleTick))
	env.fleet.Store(NewFleet())
	return env
}

// Bound sets the listener's bounds on connections and bytes in flight.
func (env *Env) Bound(l *configs.KafkaListener) {
	env.Bounds.perIP = newConnLimits()
	env.Bounds.Replica = &relay.Shared{Limit: int64(l.MaxTotalInFlightBytes)}
	env.Bounds.Requests = &relay.Shared{}
	env.Bounds.Tenants = relay.NewTenants(int64(l.MaxTenantInFlightBytes))
}

// StartSignals makes the series of snap's clusters and the engine's own.
func (env *Env) StartSignals(snap *configs.Snapshot) {
	env.Signals = signals.New(snap)
	env.Series = newFlowSeries(env.Signals.Metrics(), &env.Flow)
	env.Series.ReplicaWaits, env.Series.ReadWaits = env.budgetSeries(env.Signals.Metrics())
}

// marks are the write-queue marks of a connection made now.
func (env *Env) marks() (high, low int) {
	return int(env.Tune.FlowHigh.Load()), int(env.Tune.FlowLow.Load())
}

func (env *Env) closingFor(why signals.CloseCause, ts *signals.TenantSeries, attrs []any) {
	env.Signals.Closing(env.Log, env.refusedLog, why, ts, attrs)
}

// RefusedLine writes a refusal's line, rate-limited (signals.RateLimiter).
func (env *Env) RefusedLine(msg string, args ...any) {
	env.refusedLog.Line(env.Log, slog.LevelWarn, msg, args...)
}

// Refuse counts and logs a connection refused for a bound.
func (env *Env) Refuse(bound, tenant string) {
	env.Signals.Refused(bound, tenant)
	env.RefusedLine("kafka connection refused", "bound", bound)
}

// Recovered turns a panic (r, recovered by the caller's deferred call) in
// a callback into the close of that one connection, logged loudly with its
// stack: gnet has no recover of its own, and one panic would otherwise end
// every tenant's connections. x is what the callback served: a gnet
// connection, a handle, a client or a broker connection (nil: none).
func (env *Env) Recovered(r any, x any, where string) {
	if r == nil {
		return
	}
	env.Signals.Panic()
	env.Log.Error("kafka connection closed: internal error", "where", where, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	gc, _ := x.(gnet.Conn)
	if gc != nil {
		x = gc.Context()
	}
	if c, ok := x.(*conn.Conn); ok {
		x = c.Owner()
	}
	switch o := x.(type) {
	case *Client:
		o.close(signals.CloseInternal)
	case *upstreamConn:
		o.cl.close(signals.CloseInternal)
	case aspect: // a client seen as one of its concerns (aspects.go)
		o.client().close(signals.CloseInternal)
	default:
		if gc != nil {
			_ = gc.Close()
		}
	}
}

// Open makes the session of a client connection the acceptor enrolled;
// false: refused for a bound (B1), to be reset.
func (env *Env) Open(c gnet.Conn, route Route) bool {
	cl := newClient(env, c, route)
	if cl == nil {
		return false
	}
	high, low := env.marks()
	cl.c = conn.Open(cl.lp.fc, c, cl, high, low)
	_ = kernel.SetUserTimeout(cl.c.Fd(), env.KernelWriteTimeout())
	return true
}

// KernelWriteTimeout is the client sockets' TCP_USER_TIMEOUT: the write
// timeout (B3) and two of the sweep's passes, so that the sweep closes a
// client that reads nothing first, with its line. The kernel's bound
// covers what the sweep does not see: bytes of a client that stopped
// reading waiting in its socket alone, and sockets the gateway closed
// with bytes unsent, whose peer is gone or reads nothing (orphans in
// FIN-WAIT-1, else held minutes by zero-window probes).
func (env *Env) KernelWriteTimeout() time.Duration { return env.WriteTimeout + 2*time.Second }

// Enrolled handles the open of a broker connection enrolled for a client
// (its context); false when c is not one.
func Enrolled(c gnet.Conn) bool {
	u, ok := c.Context().(*upstreamConn)
	if !ok {
		return false
	}
	defer u.cl.lp.fc.Settle()
	u.opened(c)
	return true
}

// EnrolledClosed handles the close of a broker connection closed before
// its handle was made; false when c is not one.
func EnrolledClosed(c gnet.Conn, err error) bool {
	u, ok := c.Context().(*upstreamConn)
	if ok {
		u.onClose(err)
	}
	return ok
}

// recoverConn is Recovered for a deferred call on the loop (recover is
// called by the deferred function itself); the mechanism's guard too
// (conn.NewLoop).
func (env *Env) recoverConn(x any, where string) { env.Recovered(recover(), x, where) }

// MsgSameCluster is the line of an upstream refused for reaching the
// physical cluster of another (U3).
const MsgSameCluster = "kafka connection refused: two upstreams reach the same physical cluster"

// RefusedCluster reports whether cluster's upstream is refused (U3:
// another upstream reaches the same physical cluster under other
// prefixes); its connections are closed, and each is logged
// (rate-limited).
func (env *Env) RefusedCluster(cluster *configs.Cluster) bool {
	same := env.Fleet().SameCluster
	if cluster == nil || len(same) == 0 {
		return false
	}
	other, ok := same[cluster.Upstream]
	if !ok {
		return false
	}
	if ok, dropped := env.refusedLog.Allow(); ok {
		attrs := []any{"cluster", cluster.Name, "upstream", cluster.Upstream, "same_as", other}
		if dropped > 0 {
			attrs = append(attrs, "lines_dropped", dropped)
		}
		env.Log.Log(context.Background(), slog.LevelError, MsgSameCluster, attrs...)
	}
	return true
}
