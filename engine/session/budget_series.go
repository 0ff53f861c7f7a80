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
	`flexway_engine_in_flight_bytes{scope="requests"}`,
	`flexway_engine_read_budget_pauses_total`,
}

// budgetSeries registers the replica budget's gauges on set, read from
// env.Bounds.Replica at each scrape (0 before the listener's bounds are
// set), and returns the counter of the requests that waited for it. The
// replica's bytes include what clients sent and the gateway has not
// handled yet; scope="requests" says how much of it that is, and the
// second counter how many clients were paused for it (inbound.go).
func (env *Env) budgetSeries(set *metrics.Set) (count, count) {
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
	set.NewGauge(InFlightSeries[3], func() float64 {
		if r := env.Bounds.Requests; r != nil {
			return float64(r.Used())
		}
		return 0
	})
	return count{set.NewCounter(InFlightSeries[2])}, count{set.NewCounter(InFlightSeries[4])}
}
