// Package configs loads flexway.yaml, the AsyncAPI contract it names and the
// API-key store into one immutable Snapshot. A reload builds a new Snapshot;
// every request is judged on the Snapshot in force (engine swaps it atomically).
//
// Concurrency: a *Snapshot is never modified after Load returns; share it freely.
package configs

import "time"

// File is flexway.yaml as written (seed 001 example). Unknown keys are errors.
//
// After Load: defaults are applied, every file path (certificates, keys, CA
// files, "file:" references) is resolved against flexway.yaml's folder, so it
// opens the same file whatever the working directory, and every Secret holds
// the secret itself ("file:" references read).
type File struct {
	Version       int                  `yaml:"version"`
	Contracts     Contracts            `yaml:"contracts"`
	Upstreams     map[string]*Upstream `yaml:"upstreams"`
	Auth          Auth                 `yaml:"auth"`
	Listeners     Listeners            `yaml:"listeners"`
	Observability Observability        `yaml:"observability"`
	Server        Server               `yaml:"server"`
	Policies      Policies             `yaml:"policies"`
	Audit         *Audit               `yaml:"audit"` // nil: no audit (O3)
}

type Contracts struct {
	AsyncAPI string `yaml:"asyncapi"` // relative to flexway.yaml's folder
}

// Upstream is upstreams.<name> (seed 001 "Les amonts").
type Upstream struct {
	Protocol string        `yaml:"protocol"` // "kafka"
	Brokers  []string      `yaml:"brokers"`
	TLS      *UpstreamTLS  `yaml:"tls"`
	SASL     *UpstreamSASL `yaml:"sasl"`
	Timeout  Duration      `yaml:"timeout"` // a connection to a broker, TLS and SASL included; default 5s
	// Embedded runs an in-process Kafka (franz-go's kfake) as this upstream:
	// the quickstart's upstream; brokers must then be empty.
	Embedded *Embedded `yaml:"embedded"`
}

type UpstreamTLS struct {
	CAFile     string `yaml:"ca_file"`
	CertFile   string `yaml:"cert_file"`
	KeyFile    string `yaml:"key_file"`
	ServerName string `yaml:"server_name"`
}

type UpstreamSASL struct {
	Mechanism string `yaml:"mechanism"` // PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
	Username  string `yaml:"username"`
	Password  Secret `yaml:"password"` // "file:/path" or a literal; after Load, the password itself
}

// Embedded is our own option (not in the seeds): an in-process kfake cluster.
type Embedded struct {
	Brokers    int    `yaml:"brokers"`    // default 3
	Host       string `yaml:"host"`       // default 127.0.0.1
	Port       int    `yaml:"port"`       // first broker's port, the next ones follow; 0 = any free ports
	Partitions int32  `yaml:"partitions"` // partitions of the seeded topics, default 3
	// SeedTopics: create <prefix><tenant>.<channel> for every served channel of
	// this upstream and every tenant named in auth (keys, mtls clients). Default true.
	SeedTopics *bool `yaml:"seed_topics"`
}

type Auth struct {
	Issuers []Issuer `yaml:"issuers"`
	APIKeys *APIKeys `yaml:"api_keys"`
	MTLS    *MTLS    `yaml:"mtls"`
}

type Issuer struct {
	Name        string `yaml:"name"`
	Discovery   string `yaml:"discovery"` // https://…/.well-known/openid-configuration
	JWKS        string `yaml:"jwks"`      // "file:/path" of a static JWKS, instead of discovery
	Issuer      string `yaml:"issuer"`    // expected iss; default: the discovery document's
	Audience    string `yaml:"audience"`
	TenantClaim string `yaml:"tenant_claim"`
	CAFile      string `yaml:"ca_file"` // extra roots for discovery over HTTPS (tests)
	// Delegation bounds the tokens that act for another subject (RFC 8693's
	// act claim, the seed's "delegation chain"); absent, such a token is
	// refused.
	Delegation *Delegation `yaml:"delegation"`
}

// Delegation is auth.issuers[].delegation: how deep a token's act chain
// may go, and who may act.
type Delegation struct {
	MaxDepth int      `yaml:"max_depth"` // actors in the chain, 1 to MaxDelegationDepth
	Actors   []string `yaml:"actors"`    // the actors' sub admitted; empty: any
}

// MaxDelegationDepth bounds auth.issuers[].delegation.max_depth.
const MaxDelegationDepth = 8

type APIKeys struct {
	Store string `yaml:"store"` // "file:./api-keys.yaml", relative to flexway.yaml's folder
}

type MTLS struct {
	Clients []MTLSClient `yaml:"clients"`
}

type MTLSClient struct {
	ID         string   `yaml:"id"`
	Subject    string   `yaml:"subject"` // "CN=billing-app"
	Tenant     string   `yaml:"tenant"`
	Operations []string `yaml:"operations"`
}

type Listeners struct {
	Kafka *KafkaListener `yaml:"kafka"`
}

// KafkaListener is listeners.kafka; zero values are replaced by the seeds'
// defaults in Load (see defaults.go).
type KafkaListener struct {
	Address        string       `yaml:"address"`
	TLS            *ListenerTLS `yaml:"tls"`
	SNIDomain      string       `yaml:"sni_domain"`
	AdvertisedPort int          `yaml:"advertised_port"`
	Plaintext      *Plaintext   `yaml:"plaintext"`

	MaxRequestBytes               ByteSize `yaml:"max_request_bytes"`               // 16MiB
	MaxResponseBytes              ByteSize `yaml:"max_response_bytes"`              // 64MiB
	MaxConnections                int      `yaml:"max_connections"`                 // a gauge, never a refusal; default 4096
	AuthTimeout                   Duration `yaml:"auth_timeout"`                    // 10s
	IdleTimeout                   Duration `yaml:"idle_timeout"`                    // 10m
	MaxUnauthenticatedConnections *int     `yaml:"max_unauthenticated_connections"` // 256
	MaxConnectionsPerIP           *int     `yaml:"max_connections_per_ip"`          // 16; 0 = off
	MaxConnectionsPerTenant       *int     `yaml:"max_connections_per_tenant"`      // 1024
	MaxConnectionRatePerTenant    *int     `yaml:"max_connection_rate_per_tenant"`  // 100; 0 = off
	MaxFetchWait                  Duration `yaml:"max_fetch_wait"`                  // 30s
	MaxInFlightBytes              ByteSize `yaml:"max_in_flight_bytes"`             // 64MiB
	MaxTenantInFlightBytes        ByteSize `yaml:"max_tenant_in_flight_bytes"`      // total/8
	MaxTotalInFlightBytes         ByteSize `yaml:"max_total_in_flight_bytes"`       // 1GiB
	MaxSessionLifetime            Duration `yaml:"max_session_lifetime"`            // 1h, 1m..24h
	MaxTopicPartitions            int      `yaml:"max_topic_partitions"`            // 64
	OnTenantBudgetExceeded        string   `yaml:"on_tenant_budget_exceeded"`       // wait | close
	Quotas                        *Quotas  `yaml:"quotas"`
}

// The connection bounds in force (B1). Load gives each absent one its
// default (defaults.go), so readers never apply a default again; 0 means
// "off" where the seed says so.
func (k *KafkaListener) UnauthenticatedConnections() int {
	return derefInt(k.MaxUnauthenticatedConnections)
}
func (k *KafkaListener) ConnectionsPerIP() int        { return derefInt(k.MaxConnectionsPerIP) }
func (k *KafkaListener) ConnectionsPerTenant() int    { return derefInt(k.MaxConnectionsPerTenant) }
func (k *KafkaListener) ConnectionRatePerTenant() int { return derefInt(k.MaxConnectionRatePerTenant) }

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

type ListenerTLS struct {
	CertFile     string `yaml:"cert_file"`
	KeyFile      string `yaml:"key_file"`
	ClientCAFile string `yaml:"client_ca_file"`
}

type Plaintext struct {
	MeshOnly       bool   `yaml:"mesh_only"`
	AdvertisedHost string `yaml:"advertised_host"`
	// BindHost is our own key: the address the fallback ports listen on
	// (default all interfaces; the quickstart and tests use 127.0.0.1).
	BindHost string                       `yaml:"bind_host"`
	Clusters map[string]*PlaintextCluster `yaml:"clusters"`
}

type PlaintextCluster struct {
	Ports       PortRange `yaml:"ports"`
	FirstNodeID int32     `yaml:"first_node_id"`
}

type PortRange struct {
	From int `yaml:"from"`
	To   int `yaml:"to"`
}

type Quotas struct {
	Client      *Rates   `yaml:"client"`
	Tenant      *Rates   `yaml:"tenant"`
	Window      Duration `yaml:"window"`       // 1s, 100ms..10s
	MaxThrottle Duration `yaml:"max_throttle"` // 10s, 100ms..30s
	Quota       string   `yaml:"quota"`        // a policies.definitions name of type quota
}

type Rates struct {
	ProducerByteRate ByteSize `yaml:"producer_byte_rate"`
	ConsumerByteRate ByteSize `yaml:"consumer_byte_rate"`
	RequestRate      int      `yaml:"request_rate"`
}

type Observability struct {
	Kafka *ObservabilityKafka `yaml:"kafka"`
	// OTLP is our own key (seed 001 "Signaux" names no key): the
	// flexway.kafka.* metrics and the sampled spans sent over OTLP; nil
	// (the default): nothing leaves but /metrics.
	OTLP *ObservabilityOTLP `yaml:"otlp"`
}

// ObservabilityOTLP is observability.otlp (start-only, see StartOnlyDiff).
type ObservabilityOTLP struct {
	Endpoint string `yaml:"endpoint"` // http(s)://host:port[/path] of the collector
	Protocol string `yaml:"protocol"` // "http/protobuf" (default) or "grpc"
	// SamplingRatio of the authenticated requests that make a span, 0 to 1;
	// 0 (the default): no span.
	SamplingRatio float64 `yaml:"sampling_ratio"`
	// MetricsInterval: how often the metrics are sent; default 60s.
	MetricsInterval Duration `yaml:"metrics_interval"`
	// InstanceID is service.instance.id; default: a random UUID at start,
	// one per replica.
	InstanceID string `yaml:"instance_id"`
}

type ObservabilityKafka struct {
	BudgetWaitBuckets []Duration `yaml:"budget_wait_buckets"`
	Closures          *bool      `yaml:"closures"`
}

type Server struct {
	Counters *Counters `yaml:"counters"`
	// Admin is our own key (O4): the HTTP endpoint serving /metrics, /healthz, /config.
	Admin *Admin `yaml:"admin"`
	// ShutdownTimeout is our own key (U4; the seeds name none): how long a
	// stop (SIGTERM, systemd's stop) drains before it closes what is left.
	ShutdownTimeout Duration `yaml:"shutdown_timeout"`
}

type Counters struct {
	Store string   `yaml:"store"` // redis://…
	Sync  Duration `yaml:"sync"`
}

type Admin struct {
	Address string `yaml:"address"` // e.g. 127.0.0.1:9464; empty = no endpoint
}

type Policies struct {
	Definitions map[string]*Policy `yaml:"definitions"`
}

// Policy is policies.definitions.<name> (seed 001 "Quotas"): the only type
// the Kafka listener applies is quota.
type Policy struct {
	Type   string       `yaml:"type"`
	Config PolicyConfig `yaml:"config"`
}

// PolicyConfig is a quota policy's config: the tenant's Produce budget.
type PolicyConfig struct {
	Limits *QuotaLimits `yaml:"limits"`
}

// QuotaLimits are a tenant's Produce requests per UTC day and month; 0
// where not bounded (one of them at least is required).
type QuotaLimits struct {
	Day   int64 `yaml:"day"`
	Month int64 `yaml:"month"`
}

// Audit is the audit trail of decisions (O3); absent, nothing is audited.
type Audit struct {
	Decisions string `yaml:"decisions"` // refusals | all (default refusals)
	// TopicKey keys the HMAC-SHA256 of the topics the trail writes
	// ("file:/path" or a literal, 16 bytes at least): the same key on every
	// replica gives the same hash to the same topic; without it, nobody
	// reading the trail can test a guessed topic name. Absent, the key is
	// derived from flexway.yaml and the key store as read (checkAudit).
	TopicKey Secret `yaml:"topic_key"`
}

// ---- The resolved, validated view that the data plane reads. ----

// Snapshot is one loaded configuration. Built by Load; never modified after.
type Snapshot struct {
	Path     string         // flexway.yaml
	File     *File          // as read, defaults applied
	Listener *KafkaListener // == File.Listeners.Kafka, never nil after Load

	Clusters   map[string]*Cluster   // virtual clusters by name
	Operations map[string]*Operation // served operations by id
	Upstreams  map[string]*Upstream

	Keys     map[string]*APIKey // by key id (empty map without auth.api_keys); the store is re-read on every reload
	Clients  []*MTLSClient      // auth.mtls.clients
	LoadedAt time.Time

	// ContractPath and KeyStorePath are the files Load read besides Path
	// (KeyStorePath is "" without auth.api_keys): reload logs name them.
	ContractPath string
	KeyStorePath string
}

// Cluster is a virtual cluster: the operations of the contract that name it.
type Cluster struct {
	Name     string
	Upstream string // the one upstream serving it
	Prefix   string // "" or ending with "."
	// Topics by short name (the channel key).
	Topics map[string]*Topic
	// Plaintext is the fallback range, nil if none.
	Plaintext *PlaintextCluster
	// Mechanisms served on this cluster: true if some operation has such an alternative.
	Plain, OAuth, X509 bool
}

// Topic is a served channel as the cluster sees it.
type Topic struct {
	Name    string       // short name, the channel key
	Send    []*Operation // operations with action send on it
	Receive []*Operation // operations with action receive on it
}

// Operation is a served AsyncAPI operation: one with x-flexway-kafka-proxy.
// (The seeds also refuse an AsyncAPI operation id equal to an OpenAPI one's:
// that check does not apply here, this product has no OpenAPI contract.)
type Operation struct {
	ID           string
	Action       string // send | receive
	Channel      string // the channel key = topic short name
	Cluster      string
	Upstream     string
	Transactions bool
	AdminScope   string
	Plain        bool       // a plain (or apiKey in: password) alternative
	X509         bool       // an X509 alternative
	OAuthScopes  [][]string // one entry per oauth2/openIdConnect alternative: the scopes it requires
}

// Mechanism is how an identity proved itself. Its values are the seed's
// (the `mechanism` dimension of flexway_kafka_connections).
type Mechanism string

const (
	MechAPIKey Mechanism = "api_key"     // SASL PLAIN with an API key
	MechOAuth  Mechanism = "oauthbearer" // SASL OAUTHBEARER with a token
	MechMTLS   Mechanism = "mtls"        // a client certificate
)

// Admits says whether an identity proven by m may open op: only through an
// alternative of the operation's security that names its mechanism (seed 001
// "Les identités"): plain (or apiKey in: password) for API keys, oauth2 or
// openIdConnect for tokens (their scopes are matched when the token is
// verified), X509 for certificates. A key bound to an oauth2-only operation
// does not open it.
func (op *Operation) Admits(m Mechanism) bool {
	switch m {
	case MechAPIKey:
		return op.Plain
	case MechOAuth:
		return len(op.OAuthScopes) > 0
	case MechMTLS:
		return op.X509
	}
	return false
}

// APIKey is one entry of the key store (SPEC I1).
type APIKey struct {
	ID         string
	Hash       [32]byte // SHA-256 of the key
	Tenant     string
	Operations []string
	ExpiresAt  time.Time // zero = no expiry
}
