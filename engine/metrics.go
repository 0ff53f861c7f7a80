package engine

import (
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/decide"
)

const (
	decAllowed = iota
	decRefused
	decThrottled
)

var decisionNames = [...]string{"allowed", "refused", "throttled"}

// metricsSet holds the engine's series, created up front: no name is
// formatted on the request path (O1). Per-tenant series come with the
// tenant dimension (issue: signals).
type metricsSet struct {
	set                        *metrics.Set
	requests                   [codec.MaxKey + 2][3]*metrics.Counter
	connections                *metrics.Counter                 // open (gauge-like: inc/dec)
	closedBy                   [numCloseCauses]*metrics.Counter // nil: not counted
	refusedBy                  map[string]*metrics.Counter
	upOK, upErr                *metrics.Counter
	budgetWaited, budgetClosed *metrics.Counter
	budgetWait                 *metrics.Histogram
	panics                     *metrics.Counter
}

func newMetrics() *metricsSet {
	m := &metricsSet{set: metrics.NewSet(), refusedBy: map[string]*metrics.Counter{}}
	for k := 0; k <= codec.MaxKey+1; k++ {
		name := "unknown"
		if k <= codec.MaxKey && codec.Known(int16(k)) {
			name = decide.Name(int16(k))
		}
		for d, dn := range decisionNames {
			m.requests[k][d] = m.set.NewCounter(`flexway_kafka_requests_total{api="` + name + `",decision="` + dn + `"}`)
		}
	}
	m.connections = m.set.NewCounter(`flexway_kafka_connections`)
	for why, c := range closeCauses {
		if c.metric != "" {
			m.closedBy[why] = m.set.GetOrCreateCounter(`flexway_kafka_connections_closed_total{cause="` + c.metric + `"}`)
		}
	}
	for _, b := range []string{"max_unauthenticated_connections", "max_connections_per_ip", "max_connections_per_tenant", "max_connection_rate_per_tenant"} {
		m.refusedBy[b] = m.set.NewCounter(`flexway_kafka_connections_refused_total{bound="` + b + `"}`)
	}
	m.upOK = m.set.NewCounter(`flexway_kafka_upstream_connections_total{outcome="ok"}`)
	m.upErr = m.set.NewCounter(`flexway_kafka_upstream_connections_total{outcome="failed"}`)
	m.panics = m.set.NewCounter(`flexway_kafka_panics_total`)
	m.budgetWaited = m.set.NewCounter(`flexway_kafka_tenant_budget_total{outcome="waited"}`)
	m.budgetClosed = m.set.NewCounter(`flexway_kafka_tenant_budget_total{outcome="closed"}`)
	m.budgetWait = m.set.NewHistogram(`flexway_kafka_tenant_budget_wait_seconds`)
	return m
}

func (m *metricsSet) request(key int16, dec int) {
	k := int(key)
	if k < 0 || k > codec.MaxKey {
		k = codec.MaxKey + 1
	}
	m.requests[k][dec].Inc()
}

func (m *metricsSet) connOpened() { m.connections.Inc() }
func (m *metricsSet) connClosed() { m.connections.Dec() }
func (m *metricsSet) closed(why closeCause) {
	if c := m.closedBy[why]; c != nil {
		c.Inc()
	}
}
func (m *metricsSet) refused(bound string) {
	if c := m.refusedBy[bound]; c != nil {
		c.Inc()
	}
}
func (m *metricsSet) upstream(cluster, broker string, ok bool) {
	if ok {
		m.upOK.Inc()
	} else {
		m.upErr.Inc()
	}
}

// Metrics returns the engine's metric set (served at /metrics).
func (e *Engine) Metrics() *metrics.Set { return e.m.set }

func (m *metricsSet) tenantBudget(waited bool) {
	if waited {
		m.budgetWaited.Inc()
	} else {
		m.budgetClosed.Inc()
	}
}

func (m *metricsSet) tenantWait(d time.Duration) { m.budgetWait.Update(d.Seconds()) }
