package engine

import (
	"log/slog"

	"github.com/VictoriaMetrics/metrics"
	"github.com/flexway/flexway/engine/signals"
)

// The signals (O1, O2) live in package signals; the engine holds one
// signals.Set (e.m) and the limiter of the refusal lines (e.refusedLog).

// Metrics returns the engine's metric set (served at /metrics).
func (e *Engine) Metrics() *metrics.Set { return e.m.Metrics() }

// MetricNames are the names of the series /metrics exports (a histogram's
// _bucket, _sum and _count): what a dashboard or a rule may name.
func MetricNames() []string { return signals.MetricNames() }

// closingFor logs and counts one closure of a connection whose series are
// ts (its tenant label; nil: none known): the cause's line with attrs (key,
// value pairs, after its own "cause" if it has one) and its metric.
func (e *Engine) closingFor(why signals.CloseCause, ts *signals.TenantSeries, attrs []any) {
	e.m.Closing(e.log, e.refusedLog, why, ts, attrs)
}

// refusedLine logs a refusal before authentication, rate limited.
func (e *Engine) refusedLine(msg string, args ...any) {
	e.refusedLog.Line(e.log, slog.LevelWarn, msg, args...)
}

// refuse counts and logs a connection refused by a bound.
func (e *Engine) refuse(bound, tenant string) {
	e.m.Refused(bound, tenant)
	e.refusedLine("kafka connection refused", "bound", bound)
}
