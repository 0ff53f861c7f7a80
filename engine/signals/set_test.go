package signals

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
)

// O1: a tenant's series are made once, and the request path finds them
// without allocating.
func TestMetricsRequestPathAllocs(t *testing.T) {
	m := New(nil)
	ts := m.Tenant("shop", "acme")
	if again := m.Tenant("shop", "acme"); again != ts {
		t.Fatal("a second authentication of the tenant made new series")
	}
	if other := m.Tenant("shop", "globex"); other == ts {
		t.Fatal("two tenants share their series")
	}
	ts.Request(codec.KeyProduce, Allowed, CauseNone) // made at the first request of its kind
	ts.Request(codec.KeyFetch, Refused, CauseUnknownTopic)
	ts.Throttled(QuotaProducerByteRate, ScopeTenant, time.Millisecond)
	allocs := testing.AllocsPerRun(1000, func() {
		ts.Request(codec.KeyProduce, Allowed, CauseNone)
		ts.Request(codec.KeyFetch, Refused, CauseUnknownTopic)
		ts.Produced(1024)
		ts.Fetched(2048)
		m.TenantBudget(ts, true)
		m.TenantWait(ts, 3*time.Millisecond)
		ts.Throttled(QuotaProducerByteRate, ScopeTenant, time.Millisecond)
		m.Closed(CloseIdle, ts)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per request", allocs)
	}
	var out bytes.Buffer
	m.Metrics().WritePrometheus(&out)
	for _, want := range []string{
		`flexway_kafka_requests_total{cluster="shop",tenant="acme",api="Produce",decision="allowed",cause="none"} 1002`,
		`flexway_kafka_requests_total{cluster="shop",tenant="acme",api="Fetch",decision="refused",cause="unknown_topic"} 1002`,
		`flexway_kafka_bytes_total{cluster="shop",tenant="acme",direction="produce"} 1025024`,
		`flexway_kafka_tenant_budget_wait_seconds_bucket{cluster="shop",tenant="acme",le="0.005"} 1001`,
		`flexway_kafka_tenant_budget_wait_seconds_bucket{cluster="shop",tenant="acme",le="0.001"} 0`,
		`flexway_kafka_throttle_seconds_count{cluster="shop",tenant="acme",quota="producer_byte_rate",scope="tenant"} 1002`,
		`flexway_kafka_connections_closed_total{cause="idle_timeout",tenant="acme"} 1001`,
	} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("missing %s", want)
		}
	}
}

// O1: observability.kafka.closures: false counts no normal closure;
// budget_wait_buckets are the histogram's `le`.
func TestMetricsObservabilitySettings(t *testing.T) {
	closures := false
	snap := &configs.Snapshot{File: &configs.File{Observability: configs.Observability{Kafka: &configs.ObservabilityKafka{
		BudgetWaitBuckets: []configs.Duration{configs.Duration(100 * time.Microsecond), configs.Duration(time.Millisecond)},
		Closures:          &closures,
	}}}}
	m := New(snap)
	ts := m.Tenant("shop", "acme")
	m.Closed(CloseIdle, ts)
	m.Closed(CloseAuthTimeout, nil)
	m.TenantWait(ts, 500*time.Microsecond)
	var out bytes.Buffer
	m.Metrics().WritePrometheus(&out)
	text := out.String()
	if testkit.SumSeries(text, "flexway_kafka_connections_closed_total{") != 0 {
		t.Errorf("closures: false, yet counted:\n%s", text)
	}
	for _, want := range []string{
		`flexway_kafka_tenant_budget_wait_seconds_bucket{cluster="shop",tenant="acme",le="0.0001"} 0`,
		`flexway_kafka_tenant_budget_wait_seconds_bucket{cluster="shop",tenant="acme",le="0.001"} 1`,
		`flexway_kafka_tenant_budget_wait_seconds_bucket{cluster="shop",tenant="acme",le="+Inf"} 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("missing %s in\n%s", want, text)
		}
	}
	on := true
	snap.File.Observability.Kafka.Closures = &on
	m.SetClosures(snap) // a reload
	m.Closed(CloseIdle, ts)
	out.Reset()
	m.Metrics().WritePrometheus(&out)
	if !strings.Contains(out.String(), `flexway_kafka_connections_closed_total{cause="idle_timeout",tenant="acme"} 1`+"\n") {
		t.Errorf("closures back on by reload, not counted:\n%s", out.String())
	}
}
