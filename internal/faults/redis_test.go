// Issue 25.2, Q3: Redis (server.counters) killed and started again while a
// tenant's day budget counts the Produce requests that cross the gateway:
// the gateway keeps serving on its own counts, says so once, and once Redis
// is back the counts are reconciled, the budget spent at its exact count.
package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The budget of the test, the store's sync, and the lines of the seeds and
// of quota/counters the test counts.
const (
	redisBudget = 60
	redisSync   = 200 * time.Millisecond
	storeDown   = "shared counter store unreachable"
	storeBack   = "shared counter store reachable again"
	quotaSpent  = "kafka produce refused: the tenant's quota is spent"
	// acme's Produce requests the gateway let through: each one counted once
	// in the budget (engine/session/budget_quota.go).
	producesAllowed = `flexway_kafka_requests_total{cluster="shop",tenant="acme",api="Produce",decision="allowed",cause="none"}`
)

// U4, Q3: a day budget of 60 Produce requests in a real redis-server; 20
// records before, Redis killed (SIGKILL), 20 records while it is down
// (through some ten failed syncs), Redis started again, then records until
// the gateway refuses. Redis is started again on the same port with the
// same data (append-only file, fsync on every write), as an operator's
// Redis for budgets is run: so the reconciliation is checked exactly, Redis
// holding every Produce request admitted, none lost with the outage, none
// sent twice. (A Redis that comes back empty is the store's own test,
// quota/counters TestRedisDownKeepsDecidingAndReconciles.)
func TestRedisKilledThenBack(t *testing.T) {
	t.Parallel()
	srv := testkit.StartRedisPersistent(t)
	env := newFaultEnvWith(t, gwExtra{
		listener: "    quotas: { quota: plans }\n",
		server:   fmt.Sprintf("  counters: { store: %q, sync: %v }\n", srv.URL(), redisSync),
		top:      fmt.Sprintf("policies:\n  definitions:\n    plans: { type: quota, config: { limits: { day: %d } } }\n", redisBudget),
	})
	day := "flexway:plans:acme:day:" + time.Now().UTC().Format("2006-01-02")
	w := startWorkload(t, env.gw, 0, 100) // the group; the records are sent below, one by one
	w.produceSync(20, 0)
	env.reconciled(srv, day)
	before := env.gw.gauges()

	srv.Kill()
	waitFor(t, 10*time.Second, "the unreachable line", func() bool { return env.gw.lines(storeDown) >= 1 })
	if slowest := w.produceSync(20, 100*time.Millisecond); slowest > 5*time.Second {
		t.Fatalf("a Produce took %v while Redis was down: the gateway waits on it", slowest)
	}
	if n := env.gw.lines(storeDown); n != 1 {
		t.Fatalf("%q written %d times in an outage of some ten syncs: want once (a line a minute)", storeDown, n)
	}
	srv.Restart()
	waitFor(t, 10*time.Second, "the reachable-again line", func() bool { return env.gw.lines(storeBack) >= 1 })
	if n := env.reconciled(srv, day); n != 40 {
		t.Logf("%d Produce requests counted for 40 records (a client's retry counts)", n)
	}
	env.gw.settles(before)

	w.spend()
	waitFor(t, 5*time.Second, "the seed's line naming the day's window", func() bool {
		return env.gw.linesWith(quotaSpent, `"tenant":"acme"`, `"window":"day"`) == 1
	})
	if n := int(testkit.SumSeries(env.gw.metrics(), producesAllowed)); n != redisBudget {
		t.Fatalf("%d Produce requests admitted before the refusal, want the budget's %d", n, redisBudget)
	}
	env.reconciled(srv, day)
	for line, want := range map[string]int{storeDown: 1, storeBack: 1, quotaSpent: 1} {
		if n := env.gw.lines(line); n != want {
			t.Fatalf("%q written %d times for one outage, want %d", line, n, want)
		}
	}
	w.finish()
	w.onBroker(env.brokers, env.topic)
}

// reconciled waits until Redis holds acme's day count as the gateway's
// count of the Produce requests it admitted, and returns it.
func (env *faultEnv) reconciled(srv *testkit.Redis, key string) int {
	env.t.Helper()
	var allowed int
	var held string
	waitFor(env.t, 10*time.Second, "Redis holds the Produce requests admitted", func() bool {
		allowed = int(testkit.SumSeries(env.gw.metrics(), producesAllowed))
		held, _ = srv.Do("GET", key)
		return held == fmt.Sprint(allowed)
	})
	env.t.Logf("Redis holds %s: %s Produce requests", key, held)
	return allowed
}

// linesWith counts the log lines holding every one of parts.
func (gw *gateway) linesWith(parts ...string) int {
	n := 0
	for _, l := range strings.Split(gw.log.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			n++
		}
	}
	return n
}

// produceSync sends n records one by one, each acknowledged before the
// next, a pause apart, and returns the longest wait for one.
func (w *workload) produceSync(n int, pause time.Duration) (slowest time.Duration) {
	w.t.Helper()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if err := w.produceOne(); err != nil {
			w.t.Fatalf("record %d: %v", w.sent, err)
		}
		slowest = max(slowest, time.Since(t0))
		time.Sleep(pause)
	}
	return slowest
}

// produceOne sends the next record and waits for its answer; acknowledged,
// it is counted as sent and acknowledged.
func (w *workload) produceOne() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w.mu.Lock()
	n := w.sent
	w.mu.Unlock()
	r, err := w.prod.ProduceSync(ctx, &kgo.Record{Value: value(n, 100)}).First()
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sent++
	w.acked[n] = r.Partition
	return nil
}

// spend sends records until the gateway refuses one POLICY_VIOLATION
// (nothing written) with the seed's line naming the day's window.
func (w *workload) spend() {
	t := w.t
	t.Helper()
	for i := 0; ; i++ {
		err := w.produceOne()
		if err == nil {
			if i > redisBudget {
				t.Fatalf("%d records sent after the outage, none refused: the budget is %d", i+1, redisBudget)
			}
			continue
		}
		if !errors.Is(err, kerr.PolicyViolation) {
			t.Fatalf("record %d: %v, want POLICY_VIOLATION once the budget is spent", w.sent, err)
		}
		t.Logf("refused after %d records acknowledged: %v", w.ackedCount(), err)
		return
	}
}
