// Issue 36.5, Q3: the shared counter store behind Redis Sentinel, its
// primary killed while Produce requests cross the gateway.
package faults

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
)

const storeFailedOver = "shared counter store failed over"

// Q3: the built gateway's day budget counted through a redis-sentinel://
// URL (a primary, its replica, three Sentinels, the data nodes behind a
// password). 20 records, each acknowledged before the next, reconciled at
// the primary; then 20 more, the primary killed (SIGKILL) after the first
// few. The Sentinels promote the replica; the gateway says so once (the
// unreachable line, then the failed-over line naming the new primary,
// never the password), goes on counting there, and the day's count at the
// new primary is the Produce requests admitted: none lost; over only by
// what a sync in flight at the kill sent twice (invariant 22), at most the
// 20 records sent around it.
func TestRedisSentinelFailover(t *testing.T) {
	t.Parallel()
	const pw = "s3cret-sentinel-pw"
	ha := testkit.StartRedisSentinel(t, pw)
	env := newFaultEnvWith(t, gwExtra{
		listener: "    quotas: { quota: plans }\n",
		server:   fmt.Sprintf("  counters: { store: %q, sync: %v }\n", ha.URL(), redisSync),
		top:      "policies:\n  definitions:\n    plans: { type: quota, config: { limits: { day: 100000 } } }\n",
	})
	day := "flexway:plans:acme:day:" + time.Now().UTC().Format("2006-01-02")
	w := startWorkload(t, env.gw, 0, 100)
	w.produceSync(20, 0)
	env.reconciled(ha.Primary, day)
	before := env.gw.gauges()

	killed := make(chan time.Time, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		ha.Primary.Kill()
		killed <- time.Now()
	}()
	if slowest := w.produceSync(20, 50*time.Millisecond); slowest > 5*time.Second {
		t.Fatalf("a Produce took %v while the primary was down: the gateway waits on it", slowest)
	}
	at := <-killed
	waitFor(t, 60*time.Second, "the Sentinels name the replica", func() bool {
		for _, a := range ha.PrimaryAddrs() {
			if a != ha.Replica.Addr() {
				return false
			}
		}
		return true
	})
	waitFor(t, 30*time.Second, "the failed-over line", func() bool { return env.gw.lines(storeFailedOver) >= 1 })
	t.Logf("the gateway counting at the new primary %v after the kill", time.Since(at).Round(time.Millisecond))
	w.produceSync(10, 0)

	allowed, held := env.reconciledWithin(ha.Replica, day, 20)
	t.Logf("the new primary holds %d for %d Produce requests admitted", held, allowed)
	env.gw.settles(before)
	env.reconciledWithin(ha.Replica, day, 20) // and still, after more syncs
	log := env.gw.log.String()
	for line, want := range map[string]int{storeDown: 1, storeFailedOver: 1, storeBack: 0} {
		if n := env.gw.lines(line); n != want {
			t.Fatalf("%q written %d times for one failover, want %d", line, n, want)
		}
	}
	if env.gw.linesWith(storeFailedOver, ha.Replica.Addr()) != 1 || strings.Contains(log, pw) {
		t.Fatalf("the failed-over line must name the new primary %s, and no line the password", ha.Replica.Addr())
	}
	w.finish()
	w.onBroker(env.brokers, env.topic)
}

// reconciledWithin waits until the day's count at srv is the Produce
// requests the gateway admitted, or above by slack at most (a lost
// answer's resend), and returns both.
func (env *faultEnv) reconciledWithin(srv *testkit.Redis, key string, slack int) (allowed, held int) {
	env.t.Helper()
	waitFor(env.t, 30*time.Second, "the new primary holds the Produce requests admitted", func() bool {
		allowed = int(testkit.SumSeries(env.gw.metrics(), producesAllowed))
		v, _ := srv.Do("GET", key)
		held, _ = strconv.Atoi(v)
		return held >= allowed && held <= allowed+slack
	})
	return allowed, held
}
