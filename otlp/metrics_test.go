package otlp

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/engine/signals"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Every family /metrics exports has its OTLP name: a family added to
// signals without a row here would stay off OTLP.
func TestFamiliesCoverMetricNames(t *testing.T) {
	for _, n := range signals.MetricNames() {
		base := n
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suf); ok && strings.HasSuffix(b, "_seconds") {
				base = b
			}
		}
		f, ok := Families[base]
		if !ok {
			t.Errorf("%s: no OTLP name in Families", n)
			continue
		}
		if !strings.HasPrefix(f.name, "flexway.kafka.") || strings.HasSuffix(f.name, ".total") {
			t.Errorf("%s -> %s: want a flexway.kafka.* name, no suffix", n, f.name)
		}
	}
}

// The producer gives the series of a signals.Set under the seed's names:
// a counter as a cumulative monotonic sum, the connections as a gauge,
// the throttle histogram with its bounds and a count per bucket.
func TestProducerReadsTheSeries(t *testing.T) {
	s := signals.New(nil)
	ts := s.Tenant("shop", "acme")
	for range 3 {
		ts.Request(codec.KeyProduce, signals.Allowed, signals.CauseNone)
	}
	ts.Throttled(signals.QuotaProducerByteRate, signals.ScopeClient, 30*time.Millisecond)
	ts.Throttled(signals.QuotaProducerByteRate, signals.ScopeClient, 2*time.Second)
	start := time.Now()
	sm, err := newProducer(s.Metrics(), start).Produce(t.Context())
	if err != nil || len(sm) != 1 {
		t.Fatalf("Produce: %v, %d scopes", err, len(sm))
	}
	got := map[string]metricdata.Aggregation{}
	for _, m := range sm[0].Metrics {
		got[m.Name] = m.Data
	}
	req, ok := got["flexway.kafka.requests"].(metricdata.Sum[int64])
	if !ok || !req.IsMonotonic || req.Temporality != metricdata.CumulativeTemporality || len(req.DataPoints) != 1 {
		t.Fatalf("flexway.kafka.requests: %#v", got["flexway.kafka.requests"])
	}
	dp := req.DataPoints[0]
	wantAttrs := attribute.NewSet(attribute.String("cluster", "shop"), attribute.String("tenant", "acme"),
		attribute.String("api", "Produce"), attribute.String("decision", "allowed"), attribute.String("cause", "none"))
	if dp.Value != 3 || !dp.Attributes.Equals(&wantAttrs) || !dp.StartTime.Equal(start) {
		t.Errorf("requests point %v %v from %v: want 3 %v from %v", dp.Value, dp.Attributes.Encoded(attribute.DefaultEncoder()), dp.StartTime, wantAttrs.Encoded(attribute.DefaultEncoder()), start)
	}
	if g, ok := got["flexway.kafka.connections"].(metricdata.Gauge[float64]); !ok || len(g.DataPoints) == 0 {
		t.Errorf("flexway.kafka.connections: %#v", got["flexway.kafka.connections"])
	}
	h, ok := got["flexway.kafka.throttle"].(metricdata.Histogram[float64])
	if !ok || len(h.DataPoints) != 1 {
		t.Fatalf("flexway.kafka.throttle: %#v", got["flexway.kafka.throttle"])
	}
	hp := h.DataPoints[0]
	var n uint64
	for _, c := range hp.BucketCounts {
		n += c
	}
	// 30ms falls in (0.01, 0.05], 2s in (1, 5]: buckets 3 and 7 of 11.
	if hp.Count != 2 || n != 2 || len(hp.BucketCounts) != len(hp.Bounds)+1 || hp.BucketCounts[3] != 1 || hp.BucketCounts[7] != 1 ||
		!slices.Equal(hp.Bounds, []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30}) || hp.Sum < 2.02 || hp.Sum > 2.04 {
		t.Errorf("throttle point: count %d sum %v bounds %v counts %v", hp.Count, hp.Sum, hp.Bounds, hp.BucketCounts)
	}
	for name := range got {
		if !strings.HasPrefix(name, "flexway.kafka.") {
			t.Errorf("%s sent over OTLP: only flexway.kafka.*", name)
		}
	}
}
