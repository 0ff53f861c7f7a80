package session

import (
	"testing"
	"time"

	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/quota"
	"github.com/flexway/flexway/quota/counters"
)

// The budget's part of a Produce allocates nothing (the handles are made
// once per client), and counts one per Produce in the day and the month.
func TestProduceQuotaAllocatesNothing(t *testing.T) {
	store := counters.NewLocal()
	defer store.Close()
	snap := &configs.Snapshot{
		Listener: &configs.KafkaListener{Quotas: &configs.Quotas{Quota: "plans"}},
		File: &configs.File{Policies: configs.Policies{Definitions: map[string]*configs.Policy{
			"plans": {Type: "quota", Config: configs.PolicyConfig{Limits: &configs.QuotaLimits{Day: 1 << 40}}},
		}}},
	}
	cl := &Client{env: &Env{Quotas: Quotas{Counters: store}}, snap: snap, auth: clientAuth{ident: &auth.Identity{Tenant: "acme"}}}
	var p decide.Pending
	if out := cl.produceQuota(nil, nil, &p, decide.Forward); out != decide.Forward {
		t.Fatalf("within the budget: %v", out)
	}
	n := testing.AllocsPerRun(1000, func() {
		if cl.produceQuota(nil, nil, &p, decide.Forward) != decide.Forward {
			t.Fatal("refused within the budget")
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per Produce", n)
	}
	now := time.Now()
	day, month := store.Counter("plans:acme", quota.Day).Total(now), store.Counter("plans:acme", quota.Month).Total(now)
	if day != 1002 || month != 1002 { // AllocsPerRun runs once more to warm up
		t.Fatalf("counted day %d, month %d, want 1002 each", day, month)
	}
}
