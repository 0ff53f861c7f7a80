package session

import "github.com/VictoriaMetrics/metrics"

// The replica's in-flight budget on /metrics (B2, max_total_in_flight_bytes),
// in the engine's own family: the bytes held against it, read from the
// budget's counter when /metrics is scraped (nothing is done per frame),
// and the requests that waited for it. The seed names no series for the
// replica's budget (its flexway.kafka.tenant_budget is the tenant's share).

// InFlightSeries are the names budgetSeries exports.
var InFlightSeries = []string{
	`flexway_engine_in_flight_bytes{scope="replica"}`,
	`flexway_engine_in_flight_limit_bytes{scope="replica"}`,
	`flexway_engine_budget_waits_total{scope="replica"}`,
}

// budgetSeries registers the replica budget's gauges on set, read from
// env.Bounds.Replica at each scrape (0 before the listener's bounds are
// set), and returns the counter of the requests that waited for it.
func (env *Env) budgetSeries(set *metrics.Set) count {
	read := func(f func(used, limit int64) int64) func() float64 {
		return func() float64 {
			if r := env.Bounds.Replica; r != nil {
				return float64(f(r.Used(), r.Limit))
			}
			return 0
		}
	}
	set.NewGauge(InFlightSeries[0], read(func(used, _ int64) int64 { return used }))
	set.NewGauge(InFlightSeries[1], read(func(_, limit int64) int64 { return limit }))
	return count{set.NewCounter(InFlightSeries[2])}
}
