package configs

import (
	"time"
)

// Quotas: listeners.kafka.quotas (rates, windows, the quota policy it
// names) and the quota policies of policies.definitions.

// checkQuotas checks listeners.kafka.quotas: its window, throttle and rates,
// and the quota policy it names, counted in the shared store.
func (l *loader) checkQuotas(q *Quotas, p path) {
	d := l.cfg
	checkRange(d, p.at("window"), q.Window, 100*time.Millisecond, 10*time.Second)
	checkRange(d, p.at("max_throttle"), q.MaxThrottle, 100*time.Millisecond, 30*time.Second)
	for _, r := range []struct {
		key   string
		rates *Rates
	}{{"client", q.Client}, {"tenant", q.Tenant}} {
		if r.rates != nil && r.rates.RequestRate < 0 {
			d.errorf(p.at(r.key, "request_rate"), "%d is negative", r.rates.RequestRate)
		}
	}
	if q.Quota != "" {
		pol, ok := l.f.Policies.Definitions[q.Quota]
		switch {
		case !ok || pol == nil:
			d.errorf(p.at("quota"), "%q names no policies.definitions entry", q.Quota)
		case pol.Type != "quota":
			d.errorf(p.at("quota"), "%q is a policy of type %q, not quota", q.Quota, pol.Type)
		}
		if l.f.Server.Counters == nil || l.f.Server.Counters.Store == "" {
			d.errorf(p.at("quota"), "a quota policy is counted in the shared store: server.counters.store is required")
		}
	}
}

// checkPolicies checks policies.definitions: each a quota with a day or
// month limit.
func (l *loader) checkPolicies() {
	d := l.cfg
	for _, name := range sortedKeys(l.f.Policies.Definitions) {
		pol := l.f.Policies.Definitions[name]
		p := path{"policies", "definitions", name}
		if pol == nil {
			d.errorf(p, "empty: declare type: quota and its config")
			continue
		}
		if pol.Type != "quota" {
			if pol.Type == "" {
				d.errorf(p.at("type"), "required: quota")
			} else {
				d.errorf(p.at("type"), "%q is not a policy the Kafka listener applies: quota is", pol.Type)
			}
			continue
		}
		lim := pol.Config.Limits
		if lim == nil {
			d.errorf(p.at("config", "limits"), "required: { day, month }, the tenant's Produce budget")
			continue
		}
		for key, v := range map[string]int64{"day": lim.Day, "month": lim.Month} {
			if v < 0 {
				d.errorf(p.at("config", "limits", key), "%d: a positive number of requests expected", v)
			}
		}
		if lim.Day == 0 && lim.Month == 0 {
			d.errorf(p.at("config", "limits"), "required: day, month or both")
		}
	}
}
