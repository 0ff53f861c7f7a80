package engine

import (
	"github.com/VictoriaMetrics/metrics"
	"github.com/flexway/flexway/engine/signals"
)

// The signals (O1, O2) live in package signals; the sessions' environment
// holds one signals.Set (session.Env.Signals).

// Metrics returns the engine's metric set (served at /metrics).
func (e *Engine) Metrics() *metrics.Set { return e.env.Signals.Metrics() }

// MetricNames are the names of the series /metrics exports (a histogram's
// _bucket, _sum and _count): what a dashboard or a rule may name.
func MetricNames() []string { return signals.MetricNames() }
