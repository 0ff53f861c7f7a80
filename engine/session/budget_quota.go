package session

// The day/month budget of a tenant's Produce requests (issue 8 item 4, SPEC
// Q3, seed 001 "Quotas : l'étranglement de KIP-219"): listeners.kafka.quotas
// .quota names a policies.definitions entry of type quota; each Produce the
// gateway would forward counts one in the tenant's Counter(<policy>:<tenant>)
// per UTC day and per UTC month of the shared store (server.counters). At
// the limit the Produce is answered POLICY_VIOLATION on every partition and
// nothing reaches the broker.

import (
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/quota"
	"github.com/twmb/franz-go/pkg/kerr"
)

// tenantQuota is a client's handles on its tenant's budget counters, made
// at its first Produce and again when the policy or the tenant changes (a
// Client keeps a pointer: most have no budget, invariant 56).
type tenantQuota struct {
	policy, tenant string
	day, month     quota.Counter
}

// produceQuota applies the tenant's budget to a Produce decide judged
// Forward (out): it counts it, or refuses it when a window is spent. The
// check reads the budget then counts: requests judged at the same moment on
// other loops (or other replicas, within a sync) may pass the limit by as
// many (DESIGN.md).
func (cl *Client) produceQuota(h *codec.RequestHeader, frame []byte, p *decide.Pending, out decide.Outcome) decide.Outcome {
	tq, lim := cl.budgetCounters()
	if tq == nil {
		return out
	}
	q := cl.snap.Listener.Quotas
	now := time.Now()
	var window string
	var limit int64
	switch {
	case lim.Day > 0 && tq.day.Total(now) >= lim.Day:
		window, limit = "day", lim.Day
	case lim.Month > 0 && tq.month.Total(now) >= lim.Month:
		window, limit = "month", lim.Month
	default:
		tq.day.Add(now, 1)
		tq.month.Add(now, 1)
		return out
	}
	if ok, dropped := cl.env.Quotas.Log.Allow(); ok {
		cl.env.Log.Warn("kafka produce refused: the tenant's quota is spent",
			"cluster", cl.route.Cluster.Name, "tenant", cl.auth.ident.Tenant, "policy", q.Quota,
			"window", window, "limit", limit, "lines_dropped", dropped)
	}
	return cl.sess.RefuseProduce(h, frame, p, kerr.PolicyViolation.Code)
}

// budgetCounters returns the client's handles on its tenant's budget
// counters (made at its first Produce, again when the policy or the tenant
// changes) and the policy's limits; nil when no budget applies.
func (cl *Client) budgetCounters() (*tenantQuota, *configs.QuotaLimits) {
	q := cl.snap.Listener.Quotas
	if q == nil || q.Quota == "" || cl.env.Quotas.Counters == nil || cl.auth.ident == nil {
		return nil, nil
	}
	pol := cl.snap.File.Policies.Definitions[q.Quota]
	if pol == nil || pol.Config.Limits == nil {
		return nil, nil
	}
	tq := cl.quota
	if tq == nil || tq.policy != q.Quota || tq.tenant != cl.auth.ident.Tenant {
		name := q.Quota + ":" + cl.auth.ident.Tenant
		tq = &tenantQuota{policy: q.Quota, tenant: cl.auth.ident.Tenant,
			day: cl.env.Quotas.Counters.Counter(name, quota.Day), month: cl.env.Quotas.Counters.Counter(name, quota.Month)}
		cl.quota = tq
	}
	return tq, pol.Config.Limits
}

// budgetStage: a Produce waits for its tenant's budget counters to be
// read once (budgetWaits); its verdict is judge's (produceQuota).
type budgetStage struct{}

func (budgetStage) admit(cl *Client, h codec.RequestHeader, _ []byte) step {
	if cl.budgetWaits(h.Key) {
		return stepWait
	}
	return stepNext
}

// budgetWaits reports whether a Produce must wait for its tenant's budget
// counters to be read from the shared store once (issue 22.4): a replica
// just started knows none of what was spent before it, and would let a
// spent budget through until its first sync. The connection is held (the
// tick asks again) for that one read, a round trip to the store, or the
// store's timeout when it is down (then the replica decides on its own
// count, as it does while the store is unreachable).
func (cl *Client) budgetWaits(key int16) bool {
	if key != codec.KeyProduce {
		return false
	}
	tq, _ := cl.budgetCounters()
	if tq == nil || (quota.CounterReady(tq.day) && quota.CounterReady(tq.month)) {
		return false
	}
	cl.hold()
	return true
}
