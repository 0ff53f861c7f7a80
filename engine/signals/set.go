package signals

import (
	"sync"
	"sync/atomic"

	"github.com/VictoriaMetrics/metrics"
	"github.com/flexway/flexway/configs"
)

// Set holds the engine's series. The unregistered totals (connections,
// closedBy, refusedBy, up*, budget*) are what the engine's tests read
// (Connections, ClosedBy, …); the registered series are what /metrics
// shows (Metrics).
type Set struct {
	set *metrics.Set

	// Totals over every label, not exported.
	connections                *metrics.Counter
	closedBy                   [numCloseCauses]*metrics.Counter // nil: not a normal closure
	refusedBy                  map[string]*metrics.Counter
	upOK, upErr                *metrics.Counter
	budgetWaited, budgetClosed *metrics.Counter
	panics                     *metrics.Counter

	// closures: observability.kafka.closures (reloadable), read at each closure.
	closures atomic.Bool
	// waitBuckets: observability.kafka.budget_wait_buckets in seconds (start-only).
	waitBuckets []float64

	refusedPreAuth map[string]*metrics.Counter // the two bounds without a tenant
	authTimeout    *metrics.Counter            // connections_closed_total{cause="auth_timeout"}

	mu        sync.Mutex
	tenants   map[string]*tenantLabel     // by tenant name; at most MaxTenants + the shared ones
	series    map[[2]string]*TenantSeries // by (cluster label, tenant label)
	upstreams map[[3]string]*metrics.Counter
	// unreachable: the brokers (cluster, broker) whose last dial failed;
	// their next failures are counted, not logged (Upstream).
	unreachable map[[2]string]bool
}

// tenantLabel is a tenant's label value and the series that have a tenant
// but no cluster dimension.
type tenantLabel struct {
	name    string // the label: the tenant, or LabelOther
	refused [2]*metrics.Counter
	// closed by CloseCause; nil where the cause is no normal closure.
	closed [numCloseCauses]*metrics.Counter
}

// New makes the engine's series for snap's observability.kafka settings
// (nil: the defaults).
func New(snap *configs.Snapshot) *Set {
	s := &Set{
		set:            metrics.NewSet(),
		connections:    &metrics.Counter{},
		refusedBy:      map[string]*metrics.Counter{},
		refusedPreAuth: map[string]*metrics.Counter{},
		upOK:           &metrics.Counter{},
		upErr:          &metrics.Counter{},
		budgetWaited:   &metrics.Counter{},
		budgetClosed:   &metrics.Counter{},
		tenants:        map[string]*tenantLabel{},
		series:         map[[2]string]*TenantSeries{},
		upstreams:      map[[3]string]*metrics.Counter{},
		unreachable:    map[[2]string]bool{},
	}
	buckets := configs.DefaultBudgetWaitBuckets
	s.closures.Store(true)
	if snap != nil && snap.File != nil && snap.File.Observability.Kafka != nil {
		o := snap.File.Observability.Kafka
		if len(o.BudgetWaitBuckets) > 0 {
			buckets = o.BudgetWaitBuckets
		}
		if o.Closures != nil {
			s.closures.Store(*o.Closures)
		}
	}
	for _, b := range buckets {
		s.waitBuckets = append(s.waitBuckets, b.D().Seconds())
	}
	byLabel := map[string]*metrics.Counter{}
	for why, c := range closeCauses {
		if c.metric != "" {
			if byLabel[c.metric] == nil {
				byLabel[c.metric] = &metrics.Counter{}
			}
			s.closedBy[why] = byLabel[c.metric]
		}
	}
	for _, b := range boundNames {
		s.refusedBy[b] = &metrics.Counter{}
		if tenantBound(b) < 0 {
			s.refusedPreAuth[b] = s.set.NewCounter(`flexway_kafka_connections_refused_total{bound="` + b + `"}`)
		}
	}
	s.authTimeout = s.set.NewCounter(`flexway_kafka_connections_closed_total{cause="auth_timeout"}`)
	s.panics = s.set.NewCounter(`flexway_kafka_panics_total`)
	return s
}

// Metrics returns the registered series (served at /metrics).
func (s *Set) Metrics() *metrics.Set { return s.set }

// SetClosures applies observability.kafka.closures (at start and reload).
func (s *Set) SetClosures(snap *configs.Snapshot) {
	if snap != nil && snap.File != nil && snap.File.Observability.Kafka != nil && snap.File.Observability.Kafka.Closures != nil {
		s.closures.Store(*snap.File.Observability.Kafka.Closures)
	}
}

// tenantLocked returns the label of tenant name: its own among the first
// MaxTenants, else the shared LabelOther. s.mu is held.
func (s *Set) tenantLocked(name string) *tenantLabel {
	if t := s.tenants[name]; t != nil {
		return t
	}
	label := name
	if name != LabelAnonymous {
		n := len(s.tenants)
		if s.tenants[LabelAnonymous] != nil {
			n--
		}
		if s.tenants[LabelOther] != nil {
			n--
		}
		if n >= MaxTenants {
			if t := s.tenants[LabelOther]; t != nil {
				return t
			}
			label = LabelOther
		}
	}
	t := &tenantLabel{name: labelValue(label)}
	s.tenants[label] = t
	if label == LabelAnonymous {
		return t // before authentication: never a tenant of a refusal or a closure
	}
	tl := `tenant="` + t.name + `"`
	t.refused[0] = s.set.NewCounter(`flexway_kafka_connections_refused_total{bound="max_connections_per_tenant",` + tl + `}`)
	t.refused[1] = s.set.NewCounter(`flexway_kafka_connections_refused_total{bound="max_connection_rate_per_tenant",` + tl + `}`)
	for why, c := range closeCauses {
		if c.metric != "" && CloseCause(why) != CloseAuthTimeout {
			t.closed[why] = s.set.GetOrCreateCounter(`flexway_kafka_connections_closed_total{cause="` + c.metric + `",` + tl + `}`)
		}
	}
	return t
}

// The counters of the engine, by event.

// ConnOpened counts a connection opened, in the series ts.
func (s *Set) ConnOpened(ts *TenantSeries) {
	s.connections.Inc()
	ts.conns[MechNone].Inc()
}

// ConnMoved moves an open connection from one series to another (its SNI
// read, its authentication).
func (s *Set) ConnMoved(from *TenantSeries, fromMech Mech, to *TenantSeries, toMech Mech) {
	from.conns[fromMech].Dec()
	to.conns[toMech].Inc()
}

// ConnClosed counts a connection of the series ts closed.
func (s *Set) ConnClosed(ts *TenantSeries, mech Mech) {
	s.connections.Dec()
	ts.conns[mech].Dec()
}

// Closed counts a normal closure (observability.kafka.closures); ts is the
// connection's series, nil when none is known.
func (s *Set) Closed(why CloseCause, ts *TenantSeries) {
	c := s.closedBy[why]
	if c == nil {
		return
	}
	c.Inc()
	if !s.closures.Load() {
		return
	}
	if why == CloseAuthTimeout {
		s.authTimeout.Inc() // before authentication: no tenant
		return
	}
	if ts == nil {
		return
	}
	if tc := ts.t.closed[why]; tc != nil {
		tc.Inc()
	}
}

// Refused counts a connection refused by a bound; tenant only for the two
// tenant bounds (before authentication, never a tenant).
func (s *Set) Refused(bound, tenant string) {
	if c := s.refusedBy[bound]; c != nil {
		c.Inc()
	}
	i := tenantBound(bound)
	if i < 0 {
		if c := s.refusedPreAuth[bound]; c != nil {
			c.Inc()
		}
		return
	}
	s.mu.Lock()
	t := s.tenantLocked(tenant)
	s.mu.Unlock()
	t.refused[i].Inc()
}

// Upstream counts a connection of the gateway to a broker: broker is a
// node id or "bootstrap", never an address. For a failure it reports
// whether it is the broker's first since its last good connection: an
// outage is logged once (CloseDialFailed), its later failures only
// counted (CloseDialFailedAgain), however often clients reconnect.
func (s *Set) Upstream(cluster, broker string, ok bool) (first bool) {
	outcome := "failed"
	if ok {
		s.upOK.Inc()
		outcome = "ok"
	} else {
		s.upErr.Inc()
	}
	key := [3]string{cluster, broker, outcome}
	s.mu.Lock()
	first = !ok && !s.unreachable[[2]string{cluster, broker}]
	if ok {
		delete(s.unreachable, [2]string{cluster, broker})
	} else {
		s.unreachable[[2]string{cluster, broker}] = true
	}
	c := s.upstreams[key]
	if c == nil {
		c = s.set.NewCounter(`flexway_kafka_upstream_connections_total{cluster="` + labelValue(cluster) + `",broker="` + labelValue(broker) + `",outcome="` + outcome + `"}`)
		s.upstreams[key] = c
	}
	s.mu.Unlock()
	c.Inc()
	return first
}

// Panic counts a panic recovered in a callback.
func (s *Set) Panic() { s.panics.Inc() }

// The totals, as the engine's tests read them.

// Connections is the number of open client connections.
func (s *Set) Connections() uint64 { return s.connections.Get() }

// ClosedBy is the number of normal closures counted under why's label.
func (s *Set) ClosedBy(why CloseCause) uint64 {
	if c := s.closedBy[why]; c != nil {
		return c.Get()
	}
	return 0
}

// RefusedBy is the number of connections bound refused.
func (s *Set) RefusedBy(bound string) uint64 {
	if c := s.refusedBy[bound]; c != nil {
		return c.Get()
	}
	return 0
}

// UpstreamFailed is the number of broker connections that failed.
func (s *Set) UpstreamFailed() uint64 { return s.upErr.Get() }

// BudgetWaited and BudgetClosed count the tenant budget's outcomes over
// every tenant.
func (s *Set) BudgetWaited() uint64 { return s.budgetWaited.Get() }
func (s *Set) BudgetClosed() uint64 { return s.budgetClosed.Get() }

// Panics is the number of panics recovered.
func (s *Set) Panics() uint64 { return s.panics.Get() }

// RequestCount sums flexway_kafka_requests_total for key and dec over every
// tenant and cause.
func (s *Set) RequestCount(key int16, dec Decision) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n uint64
	for _, ts := range s.series {
		row := ts.reqs[apiIndex(key)].Load()
		if row == nil {
			continue
		}
		for c := range row[dec] {
			if p := row[dec][c].Load(); p != nil {
				n += p.Get()
			}
		}
	}
	return n
}
