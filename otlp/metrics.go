package otlp

// The metrics' way out: a producer the OpenTelemetry SDK's periodic reader
// asks at each interval, which reads the series /metrics serves (one
// VictoriaMetrics set, its Prometheus text parsed by the Prometheus
// project's own parser) and gives the flexway_kafka_* families under the
// seed's dotted names (flexway.kafka.requests, …): counters as cumulative
// monotonic sums, gauges as gauges, histograms as explicit-bucket
// histograms, every label an attribute. The other families stay on
// /metrics alone.

import (
	"bytes"
	"context"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/VictoriaMetrics/metrics"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

type kind uint8

const (
	kindSum kind = iota
	kindGauge
	kindHistogram
)

// family is a Prometheus family's OTLP metric.
type family struct {
	name string
	unit string
	kind kind
}

// Families maps each family of signals.MetricNames (a histogram by its
// base name) to its OTLP metric: the seed's name, without the Prometheus
// suffixes _total and _seconds (the unit says it).
var Families = map[string]family{
	"flexway_kafka_connections":                         {"flexway.kafka.connections", "{connection}", kindGauge},
	"flexway_kafka_requests_total":                      {"flexway.kafka.requests", "{request}", kindSum},
	"flexway_kafka_bytes_total":                         {"flexway.kafka.bytes", "By", kindSum},
	"flexway_kafka_connections_refused_total":           {"flexway.kafka.connections.refused", "{connection}", kindSum},
	"flexway_kafka_connections_closed_total":            {"flexway.kafka.connections.closed", "{connection}", kindSum},
	"flexway_kafka_tenant_budget_total":                 {"flexway.kafka.tenant_budget", "{request}", kindSum},
	"flexway_kafka_upstream_connections_total":          {"flexway.kafka.upstream.connections", "{connection}", kindSum},
	"flexway_kafka_panics_total":                        {"flexway.kafka.panics", "{panic}", kindSum},
	"flexway_kafka_audit_dropped_total":                 {"flexway.kafka.audit.dropped", "{record}", kindSum},
	"flexway_kafka_audit_records_total":                 {"flexway.kafka.audit.records", "{record}", kindSum},
	"flexway_kafka_audit_unauthenticated_dropped_total": {"flexway.kafka.audit.unauthenticated.dropped", "{record}", kindSum},
	"flexway_kafka_throttle_seconds":                    {"flexway.kafka.throttle", "s", kindHistogram},
	"flexway_kafka_tenant_budget_wait_seconds":          {"flexway.kafka.tenant_budget.wait", "s", kindHistogram},
}

// producer reads set at each collection; start is the series' start (the
// replica's) for the cumulative sums.
type producer struct {
	set   *metrics.Set
	start time.Time
	order []string // Families' keys, sorted
}

func newProducer(set *metrics.Set, start time.Time) *producer {
	p := &producer{set: set, start: start}
	for k := range Families {
		p.order = append(p.order, k)
	}
	slices.Sort(p.order)
	return p
}

// Produce is the SDK's metric.Producer.
func (p *producer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	var buf bytes.Buffer
	p.set.WritePrometheus(&buf)
	parser := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := parser.TextToMetricFamilies(&buf)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	sm := metricdata.ScopeMetrics{Scope: instrumentation.Scope{Name: "github.com/flexway/flexway"}}
	for _, prom := range p.order {
		f := Families[prom]
		if data, n := p.aggregate(mfs, prom, f.kind, now); n > 0 {
			sm.Metrics = append(sm.Metrics, metricdata.Metrics{Name: f.name, Unit: f.unit, Data: data})
		}
	}
	return []metricdata.ScopeMetrics{sm}, nil
}

// aggregate is the OTLP data of the family prom, and its number of series.
func (p *producer) aggregate(mfs map[string]*dto.MetricFamily, prom string, k kind, now time.Time) (metricdata.Aggregation, int) {
	switch k {
	case kindGauge:
		g := metricdata.Gauge[float64]{}
		for _, s := range series(mfs[prom]) {
			g.DataPoints = append(g.DataPoints, metricdata.DataPoint[float64]{Attributes: attrs(s, ""), Time: now, Value: value(s)})
		}
		return g, len(g.DataPoints)
	case kindSum:
		c := metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true}
		for _, s := range series(mfs[prom]) {
			c.DataPoints = append(c.DataPoints, metricdata.DataPoint[int64]{Attributes: attrs(s, ""), StartTime: p.start, Time: now, Value: int64(value(s))})
		}
		return c, len(c.DataPoints)
	}
	h := histogram(mfs, prom, p.start, now)
	return h, len(h.DataPoints)
}

func series(mf *dto.MetricFamily) []*dto.Metric {
	if mf == nil {
		return nil
	}
	return mf.GetMetric()
}

// value is a series' sample: untyped, the text having no TYPE line.
func value(m *dto.Metric) float64 {
	if u := m.GetUntyped(); u != nil {
		return u.GetValue()
	}
	return m.GetGauge().GetValue() + m.GetCounter().GetValue()
}

// attrs are a series' labels but skip.
func attrs(m *dto.Metric, skip string) attribute.Set {
	kv := make([]attribute.KeyValue, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		if l.GetName() != skip {
			kv = append(kv, attribute.String(l.GetName(), l.GetValue()))
		}
	}
	return attribute.NewSet(kv...)
}

// histogram rebuilds a Prometheus histogram (_bucket by le, cumulative;
// _sum; _count) as OTLP's: finite bounds, a count per bucket.
func histogram(mfs map[string]*dto.MetricFamily, prom string, start, now time.Time) metricdata.Histogram[float64] {
	type bucket struct {
		le float64
		n  uint64
	}
	type point struct {
		attrs   attribute.Set
		buckets []bucket
	}
	points := map[attribute.Distinct]*point{}
	var keys []attribute.Distinct
	for _, s := range series(mfs[prom+"_bucket"]) {
		a := attrs(s, "le")
		pt := points[a.Equivalent()]
		if pt == nil {
			pt = &point{attrs: a}
			points[a.Equivalent()] = pt
			keys = append(keys, a.Equivalent())
		}
		for _, l := range s.GetLabel() {
			if l.GetName() == "le" {
				le, _ := strconv.ParseFloat(l.GetValue(), 64)
				pt.buckets = append(pt.buckets, bucket{le, uint64(value(s))})
			}
		}
	}
	sums, counts := byAttrs(mfs[prom+"_sum"]), byAttrs(mfs[prom+"_count"])
	h := metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality}
	for _, k := range keys {
		pt := points[k]
		sort.Slice(pt.buckets, func(i, j int) bool { return pt.buckets[i].le < pt.buckets[j].le })
		dp := metricdata.HistogramDataPoint[float64]{Attributes: pt.attrs, StartTime: start, Time: now,
			Count: uint64(counts[k]), Sum: sums[k]}
		var below uint64
		for _, b := range pt.buckets {
			if !math.IsInf(b.le, 1) {
				dp.Bounds = append(dp.Bounds, b.le)
				dp.BucketCounts = append(dp.BucketCounts, b.n-below)
				below = b.n
			}
		}
		dp.BucketCounts = append(dp.BucketCounts, dp.Count-below) // (last bound, +Inf)
		h.DataPoints = append(h.DataPoints, dp)
	}
	return h
}

func byAttrs(mf *dto.MetricFamily) map[attribute.Distinct]float64 {
	out := map[attribute.Distinct]float64{}
	for _, s := range series(mf) {
		a := attrs(s, "")
		out[a.Equivalent()] = value(s)
	}
	return out
}
