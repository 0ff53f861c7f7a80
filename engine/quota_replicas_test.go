package engine

// Quotas shared between replicas (Q3, issues 8 and 22.3): two gateways
// counting in one store, in-process or server.counters on a real
// redis-server, hold a tenant's summed rate, and one key's.

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/flexway/flexway/quota"
	"github.com/flexway/flexway/quota/counters"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Q3's shared buckets, through the quota.Store contract: two gateways
// (two replicas) counting a tenant's bucket in one store hold the
// tenant's summed rate, ±10 %. (The store here is in-process and exact;
// server.counters' Redis store reconciles every sync.)
func TestQuotaReplicasShareTenantRate(t *testing.T) {
	t.Parallel() // a rate over 10 s each: they wait together
	shared := quota.NewLocal()
	m := newMeter()
	ctx, cancel := m.window(13 * time.Second)
	defer cancel()
	var errs atomic.Int64
	var wg sync.WaitGroup
	// Both replicas set up before either produces, as in the Redis test
	// below: on a real broker the second's set-up would start it seconds
	// late, inside the measured span, from a full bucket.
	var cls []*kgo.Client
	for i := 0; i < 2; i++ {
		env := newTestEnv(t, "    quotas:\n      tenant: { producer_byte_rate: 1MiB }\n", WithCounters(shared))
		cls = append(cls, env.client("acme-app", producerOpts(&throttleHook{})...))
	}
	for _, cl := range cls {
		wg.Add(1)
		go func() { defer wg.Done(); produceFlatOut(ctx, cl, 8<<10, m, &errs) }()
	}
	wg.Wait()
	got := m.rate(2*time.Second, 12*time.Second)
	t.Logf("two replicas together: %.3f MiB/s", got/(1<<20))
	if !within(got, 1<<20, 0.10) {
		t.Errorf("two replicas together: %.3f MiB/s, want the tenant's 1 MiB/s ±10 %%", got/(1<<20))
	}
	if errs.Load() != 0 {
		t.Errorf("%d records failed", errs.Load())
	}
}

// Issue 8 items 4/5, Q3: two gateways (two replicas), each with its own
// server.counters store on ONE real redis-server, hold a tenant's summed
// rate, and one key's (issue 22.3: a principal's buckets are shared too),
// within one sync window of the quota: over 10 s, the bytes both let
// through are at most rate × (10 s + sync) + the bucket's burst (rate ×
// window), and at least 0.8 × rate × 10 s. With the default sync (1s) and
// a short one. The 10 s are measured after the start (4 s): until each
// replica has learned the other's spending (two syncs at most) both run
// alone from a full bucket, and then pay that back (DESIGN.md, invariant 32).
func TestQuotaReplicasShareTenantRateRedis(t *testing.T) {
	t.Parallel() // a rate over 10 s each: they wait together
	for _, c := range []struct {
		scope, quotas string
		every         time.Duration
	}{
		{"tenant", "tenant: { producer_byte_rate: 1MiB }", time.Second},
		{"tenant", "tenant: { producer_byte_rate: 1MiB }", 200 * time.Millisecond},
		// Issue 22.3: one key on two gateways is held to its one rate.
		{"client", "client: { producer_byte_rate: 1MiB }", time.Second},
	} {
		every := c.every
		t.Run(c.scope+"/"+every.String(), func(t *testing.T) {
			t.Parallel()
			srv := testkit.StartRedis(t)
			m := newMeter()
			ctx, cancel := m.window(15 * time.Second)
			defer cancel()
			var errs atomic.Int64
			var wg sync.WaitGroup
			// Both replicas set up before either produces: the second's
			// set-up (its topics on a real broker) would otherwise start it
			// seconds late, inside the measured span, from a full bucket.
			var cls []*kgo.Client
			for i := 0; i < 2; i++ {
				store, err := counters.Open(srv.URL(), every, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { store.Close() })
				env := newTestEnv(t, "    quotas:\n      "+c.quotas+"\n", WithCounters(store))
				cls = append(cls, env.client("acme-app", producerOpts(&throttleHook{})...))
			}
			for _, cl := range cls {
				wg.Add(1)
				go func() { defer wg.Done(); produceFlatOut(ctx, cl, 8<<10, m, &errs) }()
			}
			wg.Wait()
			const rate, from, span = 1 << 20, 4 * time.Second, 10 * time.Second
			got := m.rate(from, from+span) * span.Seconds()
			most := rate*(span+every).Seconds() + rate*1 // + the burst: window 1s
			least := 0.8 * rate * span.Seconds()
			t.Logf("sync %v: two replicas on one redis let %.2f MiB through in %v (%.3f MiB/s), want %.2f..%.2f MiB; KiB each second from the first: %v",
				every, got/(1<<20), span, got/(1<<20)/span.Seconds(), least/(1<<20), most/(1<<20), m.perSecond(from+span))
			if got > most || got < least {
				t.Errorf("sync %v: %.2f MiB in %v, want at most rate × (%v + sync) + burst = %.2f MiB and at least %.2f MiB",
					every, got/(1<<20), span, span, most/(1<<20), least/(1<<20))
			}
			if errs.Load() != 0 {
				t.Errorf("%d records failed", errs.Load())
			}
		})
	}
}
