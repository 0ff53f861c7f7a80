package signals

import (
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/decide"
)

// TenantSeries holds the series of one (cluster, tenant): made once, the
// first time the tenant authenticates on the cluster; a connection keeps a
// pointer. Its counters of requests are made at their first use (a few of
// the APIs x decisions x causes ever happen), then found by index.
type TenantSeries struct {
	s       *Set
	t       *tenantLabel
	cluster string
	labels  string // `cluster="…",tenant="…"`

	conns        [numMechs]*metrics.Gauge
	bytes        [numDirections]*metrics.Counter
	budgetWaited *metrics.Counter
	budgetClosed *metrics.Counter
	// budgetWait is made at the tenant's first wait: most never wait, and
	// a histogram without an observation only says NaN to a quantile.
	budgetWait atomic.Pointer[metrics.PrometheusHistogram]

	// reqs: one row per API, made at its first request (a tenant uses a
	// few of the table's APIs: ~1 KiB of pointers, not 20).
	reqs     [codec.MaxKey + 2]atomic.Pointer[reqRow]
	throttle [numQuotas][numScopes]atomic.Pointer[metrics.PrometheusHistogram]
}

// Tenant returns the series of (cluster, tenant); cluster "" is
// LabelNoCluster, tenant "" LabelAnonymous. Called at authentication and
// at a connection's open, never per request.
func (s *Set) Tenant(cluster, tenant string) *TenantSeries {
	if cluster == "" {
		cluster = LabelNoCluster
	}
	if tenant == "" {
		tenant = LabelAnonymous
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tenantLocked(tenant)
	key := [2]string{cluster, t.name}
	if ts := s.series[key]; ts != nil {
		return ts
	}
	ts := &TenantSeries{s: s, t: t, cluster: labelValue(cluster)}
	ts.labels = `cluster="` + ts.cluster + `",tenant="` + t.name + `"`
	for i, mech := range mechNames {
		ts.conns[i] = s.set.NewGauge(`flexway_kafka_connections{`+ts.labels+`,mechanism="`+mech+`"}`, nil)
	}
	ts.bytes[DirProduce] = s.set.NewCounter(`flexway_kafka_bytes_total{` + ts.labels + `,direction="produce"}`)
	ts.bytes[DirFetch] = s.set.NewCounter(`flexway_kafka_bytes_total{` + ts.labels + `,direction="fetch"}`)
	if t.name != LabelAnonymous {
		ts.budgetWaited = s.set.NewCounter(`flexway_kafka_tenant_budget_total{` + ts.labels + `,outcome="waited"}`)
		ts.budgetClosed = s.set.NewCounter(`flexway_kafka_tenant_budget_total{` + ts.labels + `,outcome="closed"}`)
	}
	s.series[key] = ts
	return ts
}

// reqRow is one API's counters by decision and cause.
type reqRow [numDecisions][numCauses]atomic.Pointer[metrics.Counter]

// apiIndex is a request's row in TenantSeries.reqs: its key, or the last
// row for a key out of the table.
func apiIndex(key int16) int {
	if key < 0 || int(key) > codec.MaxKey {
		return codec.MaxKey + 1
	}
	return int(key)
}

func apiName(k int) string {
	if k <= codec.MaxKey && codec.Known(int16(k)) {
		return decide.Name(int16(k))
	}
	return "unknown"
}

// Request counts one judged request: an index, an atomic load and an add;
// the series is made at the first request of its kind.
func (ts *TenantSeries) Request(key int16, dec Decision, cause Cause) {
	k := apiIndex(key)
	var c *metrics.Counter
	if row := ts.reqs[k].Load(); row != nil {
		c = row[dec][cause].Load()
	}
	if c == nil {
		c = ts.makeRequest(k, dec, cause)
	}
	c.Inc()
}

func (ts *TenantSeries) makeRequest(k int, dec Decision, cause Cause) *metrics.Counter {
	ts.s.mu.Lock()
	defer ts.s.mu.Unlock()
	row := ts.reqs[k].Load()
	if row == nil {
		row = new(reqRow)
		ts.reqs[k].Store(row)
	}
	slot := &row[dec][cause]
	if c := slot.Load(); c != nil {
		return c
	}
	c := ts.s.set.GetOrCreateCounter(`flexway_kafka_requests_total{` + ts.labels + `,api="` + apiName(k) + `",decision="` + decisionNames[dec] + `",cause="` + causeNames[cause] + `"}`)
	slot.Store(c)
	return c
}

// Throttled records the throttle_time_ms of one throttled answer
// (flexway_kafka_throttle_seconds{cluster,tenant,quota,scope}).
func (ts *TenantSeries) Throttled(quota Quota, scope Scope, d time.Duration) {
	slot := &ts.throttle[quota][scope]
	h := slot.Load()
	if h == nil {
		ts.s.mu.Lock()
		if h = slot.Load(); h == nil {
			h = ts.s.set.GetOrCreatePrometheusHistogramExt(`flexway_kafka_throttle_seconds{`+ts.labels+`,quota="`+quotaNames[quota]+`",scope="`+scopeNames[scope]+`"}`, throttleBuckets)
			slot.Store(h)
		}
		ts.s.mu.Unlock()
	}
	h.Update(d.Seconds())
}

// Produced and Fetched count the bytes of Produce requests and of Fetch
// answers.
func (ts *TenantSeries) Produced(n int) { ts.bytes[DirProduce].Add(n) }
func (ts *TenantSeries) Fetched(n int)  { ts.bytes[DirFetch].Add(n) }

// Bytes is the bytes counted in direction d.
func (ts *TenantSeries) Bytes(d Direction) uint64 { return ts.bytes[d].Get() }

// TenantBudget counts a request of ts that met its tenant's in-flight
// share: waited for it, or closed.
func (s *Set) TenantBudget(ts *TenantSeries, waited bool) {
	if waited {
		s.budgetWaited.Inc()
		if ts.budgetWaited != nil {
			ts.budgetWaited.Inc()
		}
		return
	}
	s.budgetClosed.Inc()
	if ts.budgetClosed != nil {
		ts.budgetClosed.Inc()
	}
}

// TenantWait records how long a request of ts waited for its tenant's
// share (flexway_kafka_tenant_budget_wait_seconds).
func (s *Set) TenantWait(ts *TenantSeries, d time.Duration) {
	if ts.t.name == LabelAnonymous {
		return
	}
	h := ts.budgetWait.Load()
	if h == nil {
		s.mu.Lock()
		if h = ts.budgetWait.Load(); h == nil {
			h = s.set.GetOrCreatePrometheusHistogramExt(`flexway_kafka_tenant_budget_wait_seconds{`+ts.labels+`}`, s.waitBuckets)
			ts.budgetWait.Store(h)
		}
		s.mu.Unlock()
	}
	h.Update(d.Seconds())
}
