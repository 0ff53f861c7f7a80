package engine

// The quotas' series (issue 8, O1): flexway_kafka_throttle_seconds and
// flexway_kafka_bytes_total, per cluster and tenant. Made once per tenant
// when a connection first spends under quotas and kept with it: the
// request path never formats a name.

import (
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/flexway/flexway/quota"
)

// quotaBroker is the broker's own throttle in the histogram's quota
// dimension (after the three rates).
const quotaBroker = quota.NumKinds

// maxQuotaTenants: past this many tenants, the next ones share the
// series of tenant "_other" (the seed's rule for every tenant dimension).
const maxQuotaTenants = 200

var scopeNames = [...]string{quota.ScopeClient: "client", quota.ScopeTenant: "tenant"}

type tenantQuotaMetrics struct {
	throttle [quota.NumKinds][quota.ScopeTenant + 1]*metrics.Histogram
	broker   *metrics.Histogram
	produced *metrics.Counter // flexway_kafka_bytes_total{direction="produce"}
	fetched  *metrics.Counter // {direction="fetch"}
}

type quotaMetricsSet struct {
	mu      sync.Mutex
	by      map[[2]string]*tenantQuotaMetrics // cluster, tenant
	tenants map[string]struct{}
}

// quotaMetrics returns the series of one cluster's tenant, made at the
// first call.
func (e *Engine) quotaMetrics(cluster string, t *quota.Tenant) *tenantQuotaMetrics {
	return e.quotaMetricsOf(cluster, t.Name)
}

func (e *Engine) quotaMetricsOf(cluster, tenant string) *tenantQuotaMetrics {
	s := &e.qm
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by, s.tenants = map[[2]string]*tenantQuotaMetrics{}, map[string]struct{}{}
	}
	if _, ok := s.tenants[tenant]; !ok {
		if len(s.tenants) >= maxQuotaTenants {
			tenant = "_other"
		} else {
			s.tenants[tenant] = struct{}{}
		}
	}
	key := [2]string{cluster, tenant}
	if m := s.by[key]; m != nil {
		return m
	}
	set := e.m.set
	lab := `cluster="` + cluster + `",tenant="` + tenant + `"`
	m := &tenantQuotaMetrics{
		broker:   set.GetOrCreateHistogram(`flexway_kafka_throttle_seconds{` + lab + `,quota="broker",scope="broker"}`),
		produced: set.GetOrCreateCounter(`flexway_kafka_bytes_total{` + lab + `,direction="produce"}`),
		fetched:  set.GetOrCreateCounter(`flexway_kafka_bytes_total{` + lab + `,direction="fetch"}`),
	}
	for k := range quota.NumKinds {
		for _, sc := range []quota.Scope{quota.ScopeClient, quota.ScopeTenant} {
			m.throttle[k][sc] = set.GetOrCreateHistogram(`flexway_kafka_throttle_seconds{` + lab +
				`,quota="` + quota.KindNames[k] + `",scope="` + scopeNames[sc] + `"}`)
		}
	}
	s.by[key] = m
	return m
}

// throttled counts one throttled answer's delay.
func (m *tenantQuotaMetrics) throttled(k quota.Kind, s quota.Scope, d time.Duration) {
	if k == quotaBroker {
		m.broker.Update(d.Seconds())
		return
	}
	if s != quota.ScopeClient && s != quota.ScopeTenant {
		return
	}
	m.throttle[k][s].Update(d.Seconds())
}

// bytes counts what the quotas count.
func (m *tenantQuotaMetrics) bytes(k quota.Kind, n int64) {
	switch k {
	case quota.ProduceBytes:
		m.produced.Add(int(n))
	case quota.FetchBytes:
		m.fetched.Add(int(n))
	}
}

// brokerThrottled counts a broker's throttle on a connection without
// quotas (rare: found by name).
func (e *Engine) brokerThrottled(cluster, tenant string, d time.Duration) {
	e.quotaMetricsOf(cluster, tenant).broker.Update(d.Seconds())
}
