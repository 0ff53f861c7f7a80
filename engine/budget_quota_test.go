package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/flexway/flexway/quota"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Issue 8 item 4, SPEC Q3: a tenant's day or month budget of Produce
// requests, counted in a real Redis (server.counters.store, ${ENV}
// expanded). Past it, the Produce is POLICY_VIOLATION on every partition,
// the broker holds exactly the admitted records, the refusal is logged
// with its window; another tenant keeps producing. The month case starts
// with another replica's spending already in Redis: the budget is the
// deployment's, not the replica's.
func TestProduceQuotaBudget(t *testing.T) {
	for _, tc := range []quotaBudgetCase{
		{"day", "{ day: 5, month: 100 }", 0, 5},
		{"month", "{ month: 4 }", 1, 3},
	} {
		t.Run(tc.window, func(t *testing.T) { produceQuotaBudget(t, tc) })
	}
}

// quotaBudgetCase is a case of TestProduceQuotaBudget: the window whose
// budget is spent, the limits of the policy plans, what "another replica"
// spent of the month before the test, and how many of acme's Produce
// requests the budget admits.
type quotaBudgetCase struct {
	window   string
	limits   string
	othersIn int64
	admitted int
}

// countersConfig is an env whose listener applies the quota policy plans
// of limits, counted in the store at $COUNTERS_URL, synced every sync.
func countersConfig(limits, sync string) envConfig {
	return envConfig{
		listenerExtra: "    quotas: { quota: plans }\n",
		extra: "server:\n  counters: { store: \"${COUNTERS_URL}\", sync: " + sync + " }\n" +
			"policies:\n  definitions:\n    plans: { type: quota, config: { limits: " + limits + " } }\n",
	}
}

// produceQuotaBudget runs a case of TestProduceQuotaBudget on a redis of
// its own: the budget spent and the refusal logged, the admitted records
// on the broker and counted in redis, the limit raised by a reload, and
// another tenant producing.
func produceQuotaBudget(t *testing.T, tc quotaBudgetCase) {
	srv := testkit.StartRedis(t)
	t.Setenv("COUNTERS_URL", srv.URL())
	now := time.Now().UTC()
	monthKey := "flexway:plans:acme:month:" + now.Format("2006-01")
	if tc.othersIn > 0 {
		if _, err := srv.Do("SET", monthKey, fmt.Sprint(tc.othersIn)); err != nil {
			t.Fatal(err)
		}
	}
	env := newTestEnvWith(t, countersConfig(tc.limits, "100ms"))
	if env.e.env.Quotas.Counters == nil {
		t.Fatal("server.counters configured: the engine opened no store")
	}
	month := env.e.env.Quotas.Counters.Counter("plans:acme", quota.Month)
	waitUntil(t, 5*time.Second, "the other replica's spending read from redis", func() bool {
		return month.Total(time.Now()) == tc.othersIn
	})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prod := env.client("acme-orders-producer", kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
	for i := 0; i < tc.admitted+3; i++ {
		err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(fmt.Sprintf("r%d", i))}).FirstErr()
		switch {
		case i < tc.admitted && err != nil:
			t.Fatalf("produce %d within the budget: %v", i, err)
		case i >= tc.admitted && !errors.Is(err, kerr.PolicyViolation):
			t.Fatalf("produce %d past the budget of %d: %v, want POLICY_VIOLATION", i, tc.admitted, err)
		}
	}
	line := env.waitLog(5*time.Second, "kafka produce refused: the tenant's quota is spent", "tenant=acme", "window="+tc.window, "policy=plans")
	t.Log(line)
	wantAdmittedOnBroker(t, env, tc.admitted)

	// Redis holds the deployment's count: the admitted ones, plus
	// the other replica's.
	key := monthKey
	if tc.window == "day" {
		key = "flexway:plans:acme:day:" + now.Format("2006-01-02")
	}
	waitUntil(t, 5*time.Second, "redis holds the admitted count", func() bool {
		v, err := srv.Do("GET", key)
		return err == nil && v == fmt.Sprint(int64(tc.admitted)+tc.othersIn)
	})

	// A reload that raises the limit applies at the next Produce;
	// what was spent is kept.
	reloadReplacing(t, env, "limits: "+tc.limits, "limits: { day: 1000, month: 1000 }")
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("after-reload")}).FirstErr(); err != nil {
		t.Fatalf("produce after the reload raised the limit: %v", err)
	}
	if got := month.Total(time.Now()); got != int64(tc.admitted)+tc.othersIn+1 {
		t.Fatalf("the month's count after the reload: %d, want %d (what was spent is kept)", got, int64(tc.admitted)+tc.othersIn+1)
	}

	// Another tenant's budget is its own.
	other := env.client("globex-app", kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
	if err := other.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("g")}).FirstErr(); err != nil {
		t.Fatalf("globex past acme's budget: %v", err)
	}
}

// wantAdmittedOnBroker: the broker holds exactly the admitted records
// r0..r<admitted-1> of acme's orders. It reads until they are all there
// (a new consumer of a real broker can take a few seconds), then a second
// more for any record past them.
func wantAdmittedOnBroker(t *testing.T, env *testEnv, admitted int) {
	direct := env.directClient(kgo.ConsumeTopics(env.phys("acme", "orders")), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := consumeAll(t, direct, admitted, 15*time.Second)
	got = append(got, consumeAll(t, direct, 1, time.Second)...)
	if len(got) != admitted {
		t.Fatalf("the broker holds %d records, want the %d admitted", len(got), admitted)
	}
	seen := map[string]bool{}
	for _, r := range got {
		seen[string(r.Value)] = true
	}
	for i := 0; i < admitted; i++ {
		if !seen[fmt.Sprintf("r%d", i)] {
			t.Fatalf("admitted record r%d is not on the broker: %v", i, seen)
		}
	}
}

// A store unreachable from the start: the gateway boots, decides the
// budget on its own counts, and says once that the store is unreachable,
// naming its host, never the URL's password.
func TestProduceQuotaStoreUnreachable(t *testing.T) {
	port := testkit.FreePort(t) // nothing listens there
	t.Setenv("COUNTERS_URL", fmt.Sprintf("redis://flexway:s3cret-pw@127.0.0.1:%d/0", port))
	env := newTestEnvWith(t, countersConfig("{ day: 2 }", "100ms"))
	line := env.waitLog(5*time.Second, "shared counter store unreachable", fmt.Sprintf("store=127.0.0.1:%d", port))
	if contains(line, "s3cret") {
		t.Fatalf("the password in the log: %s", line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prod := env.client("acme-orders-producer", kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr()
		if i < 2 && err != nil || i == 2 && !errors.Is(err, kerr.PolicyViolation) {
			t.Fatalf("produce %d with the store down: %v", i, err)
		}
		if d := time.Since(t0); d > 5*time.Second {
			t.Fatalf("produce %d took %s with the store down", i, d)
		}
	}
}

// Two gateways sharing one Redis hold one budget: what the tenant spent
// through the first is counted by the second once it synced.
func TestProduceQuotaSharedByTwoGateways(t *testing.T) {
	srv := testkit.StartRedis(t)
	t.Setenv("COUNTERS_URL", srv.URL())
	ec := countersConfig("{ day: 5 }", "100ms")
	first, second := newTestEnvWith(t, ec), newTestEnvWith(t, ec)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produce := func(env *testEnv, n int) (admitted int) {
		prod := env.client("acme-orders-producer", kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
		for i := 0; i < n; i++ {
			err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr()
			switch {
			case err == nil:
				admitted++
			case !errors.Is(err, kerr.PolicyViolation):
				t.Fatalf("produce: %v", err)
			}
		}
		return admitted
	}
	if got := produce(first, 3); got != 3 {
		t.Fatalf("the first gateway admitted %d of 3 within a budget of 5", got)
	}
	day := second.e.env.Quotas.Counters.Counter("plans:acme", quota.Day)
	waitUntil(t, 5*time.Second, "the second gateway counts the first's 3", func() bool { return day.Total(time.Now()) == 3 })
	if got := produce(second, 4); got != 2 {
		t.Fatalf("the second gateway admitted %d, want the 2 left of the day's 5", got)
	}
	second.waitLog(5*time.Second, "kafka produce refused: the tenant's quota is spent", "window=day")
}

// Issue 22.4, Q3: a day budget spent (until the gateway refuses), the
// gateway stopped at once (its last count written before it exits, well
// before the next sync), then a gateway started again on the same
// redis-server: its first Produce is
// refused POLICY_VIOLATION, with the seed's line. A replica just started
// reads the budget once before deciding on it (quota.Ready), so the spent
// budget is not let through until its first sync.
func TestProduceQuotaBudgetSurvivesRestart(t *testing.T) {
	srv := testkit.StartRedis(t)
	t.Setenv("COUNTERS_URL", srv.URL())
	// A sync far longer than the test: only the stop's last
	// reconciliation and the start's first read move counts.
	ec := countersConfig("{ day: 20 }", "1m")
	// produce sends records one by one until one is refused or n were
	// sent, and returns the errors. A client may send a record's Produce
	// more than once (a retry counts as a request), so the budget is spent
	// until the gateway refuses, not by a count of records.
	produce := func(env *testEnv, n int) []error {
		prod := env.client("acme-orders-producer", kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
		defer prod.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var errs []error
		for i := 0; i < n; i++ {
			err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(fmt.Sprintf("r%d", i))}).FirstErr()
			errs = append(errs, err)
			if err != nil {
				break
			}
		}
		return errs
	}
	first := newTestEnvWith(t, ec)
	errs := produce(first, 40)
	if last := errs[len(errs)-1]; !errors.Is(last, kerr.PolicyViolation) || len(errs) > 21 {
		t.Fatalf("%d records sent, the last: %v; want POLICY_VIOLATION by the 21st", len(errs), last)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := first.e.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	day := "flexway:plans:acme:day:" + time.Now().UTC().Format("2006-01-02")
	if got, err := srv.Do("GET", day); err != nil || fmt.Sprint(got) != "20" {
		t.Fatalf("redis holds %v (%v) for %s after the stop: want the 20 counted", got, err, day)
	}

	again := newTestEnvWith(t, ec)
	if err := produce(again, 1)[0]; !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("the first produce after the restart, budget spent: %v, want POLICY_VIOLATION", err)
	}
	t.Log(again.waitLog(5*time.Second, "kafka produce refused: the tenant's quota is spent", "tenant=acme", "window=day", "policy=plans"))
}
