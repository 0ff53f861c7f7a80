package engine

import (
	"github.com/flexway/flexway/audit"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/decide"
)

// The signals (O1, seed 001 "Signaux"): every flexway_kafka_* series with
// the seed's dimensions, each closed. A tenant's series are made once, when
// the tenant first authenticates on a cluster (tenantSeries), and the
// client keeps a pointer to them: the request path finds its counter by
// array index, without formatting a name or allocating (invariant: see
// DESIGN.md, "per-tenant series").

const (
	decAllowed = iota
	decRefused
	decThrottled
	numDecisions
)

var decisionNames = [numDecisions]string{"allowed", "refused", "throttled"}

// reqCause is the cause label of flexway_kafka_requests_total (seed 001's
// closed list; none for an allowed request).
type reqCause uint8

const (
	causeNone reqCause = iota
	causeACL
	causeAdminAPI
	causeQuota
	causeUnknownTopic
	causeAuthentication
	causeKMSUnavailable
	causeUnsupported
	causeKeyDestroyed
	numCauses
)

var causeNames = [numCauses]string{"none", "acl", "admin_api", "quota", "unknown_topic", "authentication", "kms_unavailable", "unsupported", "key_destroyed"}

// mechIdx is the mechanism label of flexway_kafka_connections.
type mechIdx uint8

const (
	mechNone mechIdx = iota // before authentication
	mechAPIKey
	mechOAuth
	mechMTLS
	numMechs
)

var mechNames = [numMechs]string{"none", string(configs.MechAPIKey), string(configs.MechOAuth), string(configs.MechMTLS)}

func mechOf(m configs.Mechanism) mechIdx {
	switch m {
	case configs.MechAPIKey:
		return mechAPIKey
	case configs.MechOAuth:
		return mechOAuth
	case configs.MechMTLS:
		return mechMTLS
	}
	return mechNone
}

// The label values that stand for no name.
const (
	// maxTenantSeries: the first 200 tenants keep their series, the rest
	// share labelOther (seed 001: the rule of every tenant dimension).
	maxTenantSeries = 200
	labelOther      = "_other"
	labelAnonymous  = "_anonymous" // a connection not authenticated yet
	labelNoCluster  = "_none"      // a TLS connection whose SNI is not read yet
)

// Throttle dimensions (flexway_kafka_throttle_seconds): quota and scope.
const (
	quotaProducerByteRate = iota
	quotaConsumerByteRate
	quotaRequestRate
	quotaBroker
	numQuotas
)

const (
	scopeClient = iota
	scopeTenant
	scopeBroker
	numScopes
)

var (
	quotaNames = [numQuotas]string{"producer_byte_rate", "consumer_byte_rate", "request_rate", "broker"}
	scopeNames = [numScopes]string{"client", "tenant", "broker"}
	// throttleBuckets: a throttle is at most max_throttle (30s at most).
	throttleBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30}
)

// bytes_total directions.
const (
	dirProduce = iota
	dirFetch
)

// The bounds of flexway_kafka_connections_refused_total.
var boundNames = []string{"max_unauthenticated_connections", "max_connections_per_ip", "max_connections_per_tenant", "max_connection_rate_per_tenant"}

// tenantBound: the index of a tenant bound in tenantLabel.refused, -1 for
// the two bounds judged before authentication (they have no tenant).
func tenantBound(bound string) int {
	switch bound {
	case "max_connections_per_tenant":
		return 0
	case "max_connection_rate_per_tenant":
		return 1
	}
	return -1
}

// metricsSet holds the engine's series. The unregistered totals (connections,
// closedBy, refusedBy, up*, budget*) are what the engine's tests read; the
// registered series are what /metrics shows.
type metricsSet struct {
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
	tenants   map[string]*tenantLabel     // by tenant name; at most maxTenantSeries + the shared ones
	series    map[[2]string]*tenantSeries // by (cluster label, tenant label)
	upstreams map[[3]string]*metrics.Counter
}

// tenantLabel is a tenant's label value and the series that have a tenant
// but no cluster dimension.
type tenantLabel struct {
	name    string // the label: the tenant, or labelOther
	refused [2]*metrics.Counter
	// closed by closeCause; nil where the cause is no normal closure.
	closed [numCloseCauses]*metrics.Counter
}

// tenantSeries holds the series of one (cluster, tenant): made once, the
// first time the tenant authenticates on the cluster; a connection keeps a
// pointer (client.ts). Its counters of requests are made at their first
// use (a few of the APIs x decisions x causes ever happen), then found by
// index.
type tenantSeries struct {
	m       *metricsSet
	t       *tenantLabel
	cluster string
	labels  string // `cluster="…",tenant="…"`

	conns        [numMechs]*metrics.Gauge
	bytes        [2]*metrics.Counter
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

func newMetrics() *metricsSet { return newMetricsFor(nil) }

// newMetricsFor makes the engine's series for snap's observability.kafka
// settings (nil: the defaults).
func newMetricsFor(snap *configs.Snapshot) *metricsSet {
	m := &metricsSet{
		set:            metrics.NewSet(),
		connections:    &metrics.Counter{},
		refusedBy:      map[string]*metrics.Counter{},
		refusedPreAuth: map[string]*metrics.Counter{},
		upOK:           &metrics.Counter{},
		upErr:          &metrics.Counter{},
		budgetWaited:   &metrics.Counter{},
		budgetClosed:   &metrics.Counter{},
		tenants:        map[string]*tenantLabel{},
		series:         map[[2]string]*tenantSeries{},
		upstreams:      map[[3]string]*metrics.Counter{},
	}
	buckets := configs.DefaultBudgetWaitBuckets
	m.closures.Store(true)
	if snap != nil && snap.File != nil && snap.File.Observability.Kafka != nil {
		o := snap.File.Observability.Kafka
		if len(o.BudgetWaitBuckets) > 0 {
			buckets = o.BudgetWaitBuckets
		}
		if o.Closures != nil {
			m.closures.Store(*o.Closures)
		}
	}
	for _, b := range buckets {
		m.waitBuckets = append(m.waitBuckets, b.D().Seconds())
	}
	byLabel := map[string]*metrics.Counter{}
	for why, c := range closeCauses {
		if c.metric != "" {
			if byLabel[c.metric] == nil {
				byLabel[c.metric] = &metrics.Counter{}
			}
			m.closedBy[why] = byLabel[c.metric]
		}
	}
	for _, b := range boundNames {
		m.refusedBy[b] = &metrics.Counter{}
		if tenantBound(b) < 0 {
			m.refusedPreAuth[b] = m.set.NewCounter(`flexway_kafka_connections_refused_total{bound="` + b + `"}`)
		}
	}
	m.authTimeout = m.set.NewCounter(`flexway_kafka_connections_closed_total{cause="auth_timeout"}`)
	m.panics = m.set.NewCounter(`flexway_kafka_panics_total`)
	return m
}

// setClosures applies observability.kafka.closures (at start and reload).
func (m *metricsSet) setClosures(snap *configs.Snapshot) {
	if snap != nil && snap.File != nil && snap.File.Observability.Kafka != nil && snap.File.Observability.Kafka.Closures != nil {
		m.closures.Store(*snap.File.Observability.Kafka.Closures)
	}
}

// labelValue keeps a label value to the characters a name of the
// configuration may hold: a value is never escaped, never breaks the
// exposition, and a registration never panics.
func labelValue(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

// tenantLocked returns the label of tenant name: its own among the first
// maxTenantSeries, else the shared labelOther. m.mu is held.
func (m *metricsSet) tenantLocked(name string) *tenantLabel {
	if t := m.tenants[name]; t != nil {
		return t
	}
	label := name
	if name != labelAnonymous {
		n := len(m.tenants)
		if m.tenants[labelAnonymous] != nil {
			n--
		}
		if m.tenants[labelOther] != nil {
			n--
		}
		if n >= maxTenantSeries {
			if t := m.tenants[labelOther]; t != nil {
				return t
			}
			label = labelOther
		}
	}
	t := &tenantLabel{name: labelValue(label)}
	m.tenants[label] = t
	if label == labelAnonymous {
		return t // before authentication: never a tenant of a refusal or a closure
	}
	tl := `tenant="` + t.name + `"`
	t.refused[0] = m.set.NewCounter(`flexway_kafka_connections_refused_total{bound="max_connections_per_tenant",` + tl + `}`)
	t.refused[1] = m.set.NewCounter(`flexway_kafka_connections_refused_total{bound="max_connection_rate_per_tenant",` + tl + `}`)
	for why, c := range closeCauses {
		if c.metric != "" && closeCause(why) != closeAuthTimeout {
			t.closed[why] = m.set.GetOrCreateCounter(`flexway_kafka_connections_closed_total{cause="` + c.metric + `",` + tl + `}`)
		}
	}
	return t
}

// forTenant returns the series of (cluster, tenant); cluster "" is
// labelNoCluster, tenant "" labelAnonymous. Called at authentication and
// at a connection's open, never per request.
func (m *metricsSet) forTenant(cluster, tenant string) *tenantSeries {
	if cluster == "" {
		cluster = labelNoCluster
	}
	if tenant == "" {
		tenant = labelAnonymous
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tenantLocked(tenant)
	key := [2]string{cluster, t.name}
	if ts := m.series[key]; ts != nil {
		return ts
	}
	ts := &tenantSeries{m: m, t: t, cluster: labelValue(cluster)}
	ts.labels = `cluster="` + ts.cluster + `",tenant="` + t.name + `"`
	for i, mech := range mechNames {
		ts.conns[i] = m.set.NewGauge(`flexway_kafka_connections{`+ts.labels+`,mechanism="`+mech+`"}`, nil)
	}
	ts.bytes[dirProduce] = m.set.NewCounter(`flexway_kafka_bytes_total{` + ts.labels + `,direction="produce"}`)
	ts.bytes[dirFetch] = m.set.NewCounter(`flexway_kafka_bytes_total{` + ts.labels + `,direction="fetch"}`)
	if t.name != labelAnonymous {
		ts.budgetWaited = m.set.NewCounter(`flexway_kafka_tenant_budget_total{` + ts.labels + `,outcome="waited"}`)
		ts.budgetClosed = m.set.NewCounter(`flexway_kafka_tenant_budget_total{` + ts.labels + `,outcome="closed"}`)
	}
	m.series[key] = ts
	return ts
}

// reqRow is one API's counters by decision and cause.
type reqRow [numDecisions][numCauses]atomic.Pointer[metrics.Counter]

// apiIndex is a request's row in tenantSeries.reqs: its key, or the last
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

// request counts one judged request: an index, an atomic load and an add;
// the series is made at the first request of its kind.
func (ts *tenantSeries) request(key int16, dec int, cause reqCause) {
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

func (ts *tenantSeries) makeRequest(k, dec int, cause reqCause) *metrics.Counter {
	ts.m.mu.Lock()
	defer ts.m.mu.Unlock()
	row := ts.reqs[k].Load()
	if row == nil {
		row = new(reqRow)
		ts.reqs[k].Store(row)
	}
	slot := &row[dec][cause]
	if c := slot.Load(); c != nil {
		return c
	}
	c := ts.m.set.GetOrCreateCounter(`flexway_kafka_requests_total{` + ts.labels + `,api="` + apiName(k) + `",decision="` + decisionNames[dec] + `",cause="` + causeNames[cause] + `"}`)
	slot.Store(c)
	return c
}

// throttled records the throttle_time_ms of one throttled answer
// (flexway_kafka_throttle_seconds{cluster,tenant,quota,scope}).
func (ts *tenantSeries) throttled(quota, scope int, d time.Duration) {
	slot := &ts.throttle[quota][scope]
	h := slot.Load()
	if h == nil {
		ts.m.mu.Lock()
		if h = slot.Load(); h == nil {
			h = ts.m.set.GetOrCreatePrometheusHistogramExt(`flexway_kafka_throttle_seconds{`+ts.labels+`,quota="`+quotaNames[quota]+`",scope="`+scopeNames[scope]+`"}`, throttleBuckets)
			slot.Store(h)
		}
		ts.m.mu.Unlock()
	}
	h.Update(d.Seconds())
}

func (ts *tenantSeries) produced(n int) { ts.bytes[dirProduce].Add(n) }
func (ts *tenantSeries) fetched(n int)  { ts.bytes[dirFetch].Add(n) }

// The counters of the engine, by event.

func (m *metricsSet) connOpened(ts *tenantSeries) {
	m.connections.Inc()
	ts.conns[mechNone].Inc()
}

// connMoved moves an open connection from one series to another (its SNI
// read, its authentication).
func (m *metricsSet) connMoved(from *tenantSeries, fromMech mechIdx, to *tenantSeries, toMech mechIdx) {
	from.conns[fromMech].Dec()
	to.conns[toMech].Inc()
}

func (m *metricsSet) connClosed(ts *tenantSeries, mech mechIdx) {
	m.connections.Dec()
	ts.conns[mech].Dec()
}

// closed counts a normal closure (observability.kafka.closures).
func (m *metricsSet) closed(why closeCause, ts *tenantSeries) {
	c := m.closedBy[why]
	if c == nil {
		return
	}
	c.Inc()
	if !m.closures.Load() {
		return
	}
	if why == closeAuthTimeout {
		m.authTimeout.Inc() // before authentication: no tenant
		return
	}
	if ts == nil {
		return
	}
	if tc := ts.t.closed[why]; tc != nil {
		tc.Inc()
	}
}

// refused counts a connection refused by a bound; tenant only for the two
// tenant bounds (before authentication, never a tenant).
func (m *metricsSet) refused(bound, tenant string) {
	if c := m.refusedBy[bound]; c != nil {
		c.Inc()
	}
	i := tenantBound(bound)
	if i < 0 {
		if c := m.refusedPreAuth[bound]; c != nil {
			c.Inc()
		}
		return
	}
	m.mu.Lock()
	t := m.tenantLocked(tenant)
	m.mu.Unlock()
	t.refused[i].Inc()
}

// upstream counts a connection of the gateway to a broker: broker is a
// node id or "bootstrap", never an address.
func (m *metricsSet) upstream(cluster, broker string, ok bool) {
	outcome := "failed"
	if ok {
		m.upOK.Inc()
		outcome = "ok"
	} else {
		m.upErr.Inc()
	}
	key := [3]string{cluster, broker, outcome}
	m.mu.Lock()
	c := m.upstreams[key]
	if c == nil {
		c = m.set.NewCounter(`flexway_kafka_upstream_connections_total{cluster="` + labelValue(cluster) + `",broker="` + labelValue(broker) + `",outcome="` + outcome + `"}`)
		m.upstreams[key] = c
	}
	m.mu.Unlock()
	c.Inc()
}

func (m *metricsSet) tenantBudget(ts *tenantSeries, waited bool) {
	if waited {
		m.budgetWaited.Inc()
		if ts.budgetWaited != nil {
			ts.budgetWaited.Inc()
		}
		return
	}
	m.budgetClosed.Inc()
	if ts.budgetClosed != nil {
		ts.budgetClosed.Inc()
	}
}

func (m *metricsSet) tenantWait(ts *tenantSeries, d time.Duration) {
	if ts.t.name == labelAnonymous {
		return
	}
	h := ts.budgetWait.Load()
	if h == nil {
		m.mu.Lock()
		if h = ts.budgetWait.Load(); h == nil {
			h = m.set.GetOrCreatePrometheusHistogramExt(`flexway_kafka_tenant_budget_wait_seconds{`+ts.labels+`}`, m.waitBuckets)
			ts.budgetWait.Store(h)
		}
		m.mu.Unlock()
	}
	h.Update(d.Seconds())
}

// Metrics returns the engine's metric set (served at /metrics).
func (e *Engine) Metrics() *metrics.Set { return e.m.set }

// requestCount sums flexway_kafka_requests_total for key and dec over every
// tenant and cause (tests).
func (m *metricsSet) requestCount(key int16, dec int) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n uint64
	for _, ts := range m.series {
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

// causeOfCode maps the Kafka error code the gateway answered a refused
// request (or a part of it) with to the seed's cause label.
func causeOfCode(key int16, code int16) reqCause {
	switch code {
	case 3, 100: // UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID
		return causeUnknownTopic
	case 29, 30, 31, 53: // TOPIC_, GROUP_, CLUSTER_, TRANSACTIONAL_ID_AUTHORIZATION_FAILED
		if audit.IsAdmin(key) {
			return causeAdminAPI // administration without the operation's admin_scope
		}
		return causeACL
	case 37, 39, 40, 42: // INVALID_PARTITIONS, INVALID_REPLICA_ASSIGNMENT, INVALID_CONFIG, INVALID_REQUEST
		if audit.IsAdmin(key) {
			return causeAdminAPI
		}
		return causeUnsupported
	case 35: // UNSUPPORTED_VERSION
		return causeUnsupported
	case 44: // POLICY_VIOLATION: a Produce past the tenant's day/month quota; else bounded administration
		if key == codec.KeyProduce {
			return causeQuota
		}
		return causeAdminAPI
	case 58: // SASL_AUTHENTICATION_FAILED
		return causeAuthentication
	}
	if audit.IsAdmin(key) {
		return causeAdminAPI
	}
	return causeACL
}

// causeOfText reads a cause label from a broker-style cause text (the
// Pending's Cause of an answer the gateway built whole).
func causeOfText(key int16, text string) reqCause {
	for _, c := range []struct {
		prefix string
		code   int16
	}{{"UNKNOWN_TOPIC_OR_PARTITION", 3}, {"TOPIC_AUTHORIZATION_FAILED", 29}, {"GROUP_AUTHORIZATION_FAILED", 30},
		{"CLUSTER_AUTHORIZATION_FAILED", 31}, {"TRANSACTIONAL_ID_AUTHORIZATION_FAILED", 53}, {"POLICY_VIOLATION", 44},
		{"UNSUPPORTED_VERSION", 35}} {
		if len(text) >= len(c.prefix) && text[:len(c.prefix)] == c.prefix {
			return causeOfCode(key, c.code)
		}
	}
	if audit.IsAdmin(key) {
		return causeAdminAPI
	}
	return causeUnsupported
}

// MetricNames are the names of the series /metrics exports (a histogram's
// _bucket, _sum and _count): what a dashboard or a rule may name.
func MetricNames() []string {
	names := []string{
		"flexway_kafka_connections",
		"flexway_kafka_requests_total",
		"flexway_kafka_bytes_total",
		"flexway_kafka_connections_refused_total",
		"flexway_kafka_connections_closed_total",
		"flexway_kafka_tenant_budget_total",
		"flexway_kafka_upstream_connections_total",
		"flexway_kafka_panics_total",
		"flexway_kafka_audit_dropped_total",
		"flexway_kafka_audit_records_total",
	}
	for _, h := range []string{"flexway_kafka_throttle_seconds", "flexway_kafka_tenant_budget_wait_seconds"} {
		names = append(names, h+"_bucket", h+"_sum", h+"_count")
	}
	return names
}
