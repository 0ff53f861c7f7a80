package signals

import "github.com/flexway/flexway/configs"

// The closed label tables of seed 001: every value a label may take is one
// of these (tenant, cluster and api excepted, bounded apart).

// Decision is the decision label of flexway_kafka_requests_total.
type Decision uint8

const (
	Allowed Decision = iota
	Refused
	Throttled
	numDecisions
)

var decisionNames = [numDecisions]string{"allowed", "refused", "throttled"}

// String is the label value.
func (d Decision) String() string { return decisionNames[d] }

// Cause is the cause label of flexway_kafka_requests_total (seed 001's
// closed list; CauseNone for an allowed request).
type Cause uint8

const (
	CauseNone Cause = iota
	CauseACL
	CauseAdminAPI
	CauseQuota
	CauseUnknownTopic
	CauseAuthentication
	CauseKMSUnavailable
	CauseUnsupported
	CauseKeyDestroyed
	numCauses
)

var causeNames = [numCauses]string{"none", "acl", "admin_api", "quota", "unknown_topic", "authentication", "kms_unavailable", "unsupported", "key_destroyed"}

// String is the label value.
func (c Cause) String() string { return causeNames[c] }

// Mech is the mechanism label of flexway_kafka_connections.
type Mech uint8

const (
	MechNone Mech = iota // before authentication
	MechAPIKey
	MechOAuth
	MechMTLS
	numMechs
)

var mechNames = [numMechs]string{"none", string(configs.MechAPIKey), string(configs.MechOAuth), string(configs.MechMTLS)}

// MechOf is the label of an authentication mechanism.
func MechOf(m configs.Mechanism) Mech {
	switch m {
	case configs.MechAPIKey:
		return MechAPIKey
	case configs.MechOAuth:
		return MechOAuth
	case configs.MechMTLS:
		return MechMTLS
	}
	return MechNone
}

// The label values that stand for no name.
const (
	// MaxTenants: the first 200 tenants keep their series, the rest share
	// LabelOther (seed 001: the rule of every tenant dimension).
	MaxTenants     = 200
	LabelOther     = "_other"
	LabelAnonymous = "_anonymous" // a connection not authenticated yet
	LabelNoCluster = "_none"      // a TLS connection whose SNI is not read yet
)

// Quota is the quota label of flexway_kafka_throttle_seconds.
type Quota uint8

const (
	QuotaProducerByteRate Quota = iota
	QuotaConsumerByteRate
	QuotaRequestRate
	QuotaBroker
	numQuotas
)

// Scope is the scope label of flexway_kafka_throttle_seconds.
type Scope uint8

const (
	ScopeClient Scope = iota
	ScopeTenant
	ScopeBroker
	numScopes
)

var (
	quotaNames = [numQuotas]string{"producer_byte_rate", "consumer_byte_rate", "request_rate", "broker"}
	scopeNames = [numScopes]string{"client", "tenant", "broker"}
	// throttleBuckets: a throttle is at most max_throttle (30s at most).
	throttleBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30}
)

// Direction is the direction label of flexway_kafka_bytes_total.
type Direction uint8

const (
	DirProduce Direction = iota
	DirFetch
	numDirections
)

// The bounds of flexway_kafka_connections_refused_total.
var boundNames = [...]string{"max_unauthenticated_connections", "max_connections_per_ip", "max_connections_per_tenant", "max_connection_rate_per_tenant"}

// Bounds are the bound label's values.
func Bounds() []string { return append([]string(nil), boundNames[:]...) }

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
		"flexway_kafka_audit_unauthenticated_dropped_total",
	}
	for _, h := range []string{"flexway_kafka_throttle_seconds", "flexway_kafka_tenant_budget_wait_seconds"} {
		names = append(names, h+"_bucket", h+"_sum", h+"_count")
	}
	return names
}
