package configs

import (
	"cmp"
	"net"
	"strconv"
	"time"
)

// The seeds' defaults (seed 001 "L'écouteur TLS", "Bornes de l'écouteur",
// "Quotas"; seed 002 "Listener bounds", "Sessions").
const (
	DefaultMaxRequestBytes               ByteSize = 16 << 20
	DefaultMaxResponseBytes              ByteSize = 64 << 20
	DefaultMaxConnections                         = 4096
	DefaultAuthTimeout                            = 10 * time.Second
	DefaultIdleTimeout                            = 10 * time.Minute
	DefaultMaxUnauthenticatedConnections          = 256
	DefaultMaxConnectionsPerIP                    = 16
	DefaultMaxConnectionsPerTenant                = 1024
	DefaultMaxConnectionRatePerTenant             = 100
	DefaultMaxFetchWait                           = 30 * time.Second
	DefaultMaxInFlightBytes              ByteSize = 64 << 20
	DefaultMaxTotalInFlightBytes         ByteSize = 1 << 30
	DefaultMaxSessionLifetime                     = time.Hour
	DefaultMaxTopicPartitions                     = 64
	DefaultOnTenantBudgetExceeded                 = "wait"
	DefaultQuotaWindow                            = time.Second
	DefaultMaxThrottle                            = 10 * time.Second
	DefaultUpstreamTimeout                        = 5 * time.Second
	DefaultEmbeddedBrokers                        = 3
	DefaultEmbeddedHost                           = "127.0.0.1"
	DefaultEmbeddedPartitions                     = 3
	DefaultAuditDecisions                         = "refusals"
	// DefaultCountersSync is our choice (the seeds name sync without a
	// default): the quota window's default, so shared buckets drift by at
	// most one window.
	DefaultCountersSync = time.Second
	// DefaultShutdownTimeout is our choice (server.shutdown_timeout, our
	// own key): under the unit's TimeoutStopSec (15s) and Kubernetes'
	// default grace period (30s), above the long-poll of a franz-go (5s) or
	// Java (500ms) consumer's Fetch.
	DefaultShutdownTimeout = 10 * time.Second

	// UnauthenticatedMaxRequestBytes bounds a request before authentication (SPEC L3); fixed.
	UnauthenticatedMaxRequestBytes ByteSize = 64 << 10
	// WriteStallTimeout closes a client that does not read its answers (SPEC B3); fixed.
	WriteStallTimeout = 30 * time.Second
)

// observability.otlp's defaults (our own keys): OTLP over HTTP, the
// metrics sent every minute (the OpenTelemetry SDK's own default).
const (
	DefaultOTLPProtocol        = "http/protobuf"
	DefaultOTLPMetricsInterval = time.Minute
)

// DefaultBudgetWaitBuckets are observability.kafka.budget_wait_buckets' default (seed 001 "Signaux").
var DefaultBudgetWaitBuckets = []Duration{
	Duration(time.Millisecond), Duration(5 * time.Millisecond), Duration(10 * time.Millisecond),
	Duration(50 * time.Millisecond), Duration(100 * time.Millisecond), Duration(500 * time.Millisecond),
	Duration(time.Second), Duration(5 * time.Second), Duration(10 * time.Second), Duration(30 * time.Second),
}

// applyDefaults fills every key left out (or written 0 where 0 is no
// meaningful value) with the seeds' default. It runs before validation, so the
// checks see the values in force.
func applyDefaults(f *File) {
	for _, u := range f.Upstreams {
		if u == nil {
			continue
		}
		setDuration(&u.Timeout, DefaultUpstreamTimeout)
		if e := u.Embedded; e != nil {
			setInt(&e.Brokers, DefaultEmbeddedBrokers)
			if e.Host == "" {
				e.Host = DefaultEmbeddedHost
			}
			if e.Partitions == 0 {
				e.Partitions = DefaultEmbeddedPartitions
			}
			if e.SeedTopics == nil {
				e.SeedTopics = ptr(true)
			}
		}
	}
	if k := f.Listeners.Kafka; k != nil {
		setBytes(&k.MaxRequestBytes, DefaultMaxRequestBytes)
		setBytes(&k.MaxResponseBytes, DefaultMaxResponseBytes)
		setInt(&k.MaxConnections, DefaultMaxConnections)
		setDuration(&k.AuthTimeout, DefaultAuthTimeout)
		setDuration(&k.IdleTimeout, DefaultIdleTimeout)
		// Pointers: 0 is meaningful for some of them ("off"), so only an
		// absent key takes the default.
		setIntPtr(&k.MaxUnauthenticatedConnections, DefaultMaxUnauthenticatedConnections)
		setIntPtr(&k.MaxConnectionsPerIP, DefaultMaxConnectionsPerIP)
		setIntPtr(&k.MaxConnectionsPerTenant, DefaultMaxConnectionsPerTenant)
		setIntPtr(&k.MaxConnectionRatePerTenant, DefaultMaxConnectionRatePerTenant)
		setDuration(&k.MaxFetchWait, DefaultMaxFetchWait)
		setBytes(&k.MaxInFlightBytes, DefaultMaxInFlightBytes)
		setBytes(&k.MaxTotalInFlightBytes, DefaultMaxTotalInFlightBytes)
		if k.MaxTenantInFlightBytes == 0 {
			// An eighth of the replica's budget; never below one connection's
			// bound, so that raising max_in_flight_bytes alone does not make
			// the default itself refused at load.
			k.MaxTenantInFlightBytes = max(k.MaxTotalInFlightBytes/8, k.MaxInFlightBytes)
		}
		setDuration(&k.MaxSessionLifetime, DefaultMaxSessionLifetime)
		setInt(&k.MaxTopicPartitions, DefaultMaxTopicPartitions)
		if k.OnTenantBudgetExceeded == "" {
			k.OnTenantBudgetExceeded = DefaultOnTenantBudgetExceeded
		}
		if q := k.Quotas; q != nil {
			setDuration(&q.Window, DefaultQuotaWindow)
			setDuration(&q.MaxThrottle, DefaultMaxThrottle)
		}
		if k.TLS != nil && k.AdvertisedPort == 0 {
			// The port clients see is the listener's, unless a load
			// balancer in front says otherwise. ":0" (tests) stays 0: the
			// engine announces the port it actually bound.
			if _, port, err := net.SplitHostPort(k.Address); err == nil {
				if n, err := strconv.Atoi(port); err == nil {
					k.AdvertisedPort = n
				}
			}
		}
	}
	observabilityDefaults(&f.Observability)
	if c := f.Server.Counters; c != nil {
		setDuration(&c.Sync, DefaultCountersSync)
	}
	setDuration(&f.Server.ShutdownTimeout, DefaultShutdownTimeout)
	if f.Audit != nil && f.Audit.Decisions == "" {
		f.Audit.Decisions = DefaultAuditDecisions
	}
}

func ptr[T any](v T) *T { return &v }

func setDuration(d *Duration, def time.Duration) {
	if *d == 0 {
		*d = Duration(def)
	}
}

func setBytes(b *ByteSize, def ByteSize) {
	if *b == 0 {
		*b = def
	}
}

func setInt(n *int, def int) {
	if *n == 0 {
		*n = def
	}
}

func setIntPtr(n **int, def int) {
	if *n == nil {
		*n = ptr(def)
	}
}

// observabilityDefaults fills observability.kafka and observability.otlp.
func observabilityDefaults(ob *Observability) {
	if ob.Kafka == nil {
		ob.Kafka = &ObservabilityKafka{}
	}
	if o := ob.Kafka; o.BudgetWaitBuckets == nil {
		o.BudgetWaitBuckets = append([]Duration(nil), DefaultBudgetWaitBuckets...)
	}
	if o := ob.Kafka; o.Closures == nil {
		o.Closures = ptr(true)
	}
	if o := ob.OTLP; o != nil {
		o.Protocol = cmp.Or(o.Protocol, DefaultOTLPProtocol)
		setDuration(&o.MetricsInterval, DefaultOTLPMetricsInterval)
	}
}
