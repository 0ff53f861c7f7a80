package main

import (
	"cmp"
	"net/url"
	"strings"

	"github.com/flexway/flexway/audit"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/quota/counters/storeurl"
)

// What /config says beside the bounds (O4, issue 24.6): the quotas, the
// policies, the shared counter store and the audit in force, as the
// snapshot holds them after a reload. Never a secret: the counter store
// is named by its scheme, host and path (a password or a query left out),
// the audit's topic key only as set or derived.

// quotasInForce is listeners.kafka.quotas (nil: none).
func quotasInForce(q *configs.Quotas) any {
	if q == nil {
		return nil
	}
	rates := func(r *configs.Rates) any {
		if r == nil {
			return nil
		}
		return map[string]any{
			"producer_byte_rate": int64(r.ProducerByteRate),
			"consumer_byte_rate": int64(r.ConsumerByteRate),
			"request_rate":       r.RequestRate,
		}
	}
	return map[string]any{
		"client":       rates(q.Client),
		"tenant":       rates(q.Tenant),
		"window":       q.Window.D().String(),
		"max_throttle": q.MaxThrottle.D().String(),
		"quota":        q.Quota,
	}
}

// policiesInForce is policies.definitions: each policy's type and limits.
func policiesInForce(p configs.Policies) map[string]any {
	out := map[string]any{}
	for name, pol := range p.Definitions {
		if pol == nil {
			continue
		}
		v := map[string]any{"type": pol.Type}
		if l := pol.Config.Limits; l != nil {
			v["limits"] = map[string]int64{"day": l.Day, "month": l.Month}
		}
		out[name] = v
	}
	return out
}

// countersInForce is server.counters (nil: the replica counts alone).
func countersInForce(c *configs.Counters) any {
	if c == nil || c.Store == "" {
		return nil
	}
	return map[string]any{"store": storeName(c.Store), "sync": c.Sync.D().String()}
}

// storeName names a URL (a counter store, an OTLP endpoint) without its
// credentials; a Sentinel's or a Cluster's by its hosts (url.Parse takes
// one).
func storeName(store string) string {
	if s, _, ok := strings.Cut(store, "://"); ok && (strings.HasSuffix(s, "-sentinel") || strings.HasSuffix(s, "-cluster")) {
		st, err := storeurl.Parse(store)
		if err != nil {
			return "(not a URL)"
		}
		return s + "://" + st.Host
	}
	u, err := url.Parse(store)
	if err != nil || u.Host == "" {
		return "(not a URL)"
	}
	return u.Scheme + "://" + u.Host + u.Path
}

// observabilityInForce is the observability section: the closures counted,
// the budget wait's bounds, and where OTLP goes (its endpoint without
// credentials, as a counter store's) with its sampling; nil OTLP: off.
func observabilityInForce(o configs.Observability) any {
	out := map[string]any{"otlp": nil}
	if k := o.Kafka; k != nil {
		kafka := map[string]any{"closures": k.Closures == nil || *k.Closures}
		var buckets []string
		for _, b := range k.BudgetWaitBuckets {
			buckets = append(buckets, b.D().String())
		}
		kafka["budget_wait_buckets"] = buckets
		out["kafka"] = kafka
	}
	if x := o.OTLP; x != nil {
		out["otlp"] = map[string]any{"endpoint": storeName(x.Endpoint), "protocol": x.Protocol,
			"sampling_ratio": x.SamplingRatio, "metrics_interval": x.MetricsInterval.D().String(), "instance_id": cmp.Or(x.InstanceID, "a random UUID at each start")}
	}
	return out
}

// auditInForce is the audit trail's setting: what it writes, and whether
// its topic key was given or derived (never the key).
func auditInForce(f *configs.File) any {
	if f == nil || f.Audit == nil {
		return map[string]any{"decisions": "off"}
	}
	key := "derived"
	if f.Audit.TopicKey != "" {
		key = "set"
	}
	decisions := "off"
	switch audit.ParseMode(f.Audit.Decisions) {
	case audit.Refusals:
		decisions = "refusals"
	case audit.All:
		decisions = "all"
	}
	return map[string]any{"decisions": decisions, "topic_key": key}
}
