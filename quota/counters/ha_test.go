package counters

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/flexway/flexway/quota"
)

// haReplica is one replica of the gateway counting on a shared store: what
// it added, and what it had added when each of its reconciliations began.
type haReplica struct {
	store *Redis
	c     quota.Counter
	log   *logBuf
	clock *syncClock
	added atomic.Int64

	mu     sync.Mutex
	atSync []int64
}

func openHA(t *testing.T, url, name string, every time.Duration) *haReplica {
	t.Helper()
	log, buf := newLog()
	h := &haReplica{log: buf, clock: &syncClock{}}
	h.store = openT(t, url, every, log, func() time.Time {
		h.mu.Lock()
		h.atSync = append(h.atSync, h.added.Load())
		h.mu.Unlock()
		return h.clock.now()
	})
	h.c = h.store.Counter(name, quota.Day)
	return h
}

// count adds 1 every 2 ms until stop is closed: the counter first, then
// added (the store never holds less than added).
func (h *haReplica) count(stop chan struct{}, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			h.c.Add(time.Now(), 1)
			h.added.Add(1)
			time.Sleep(2 * time.Millisecond)
		}
	}()
}

// resendBound is the most a lost answer can count twice (invariant 22):
// the delta of the one sync in flight when the primary died, at most what
// was added from the start of the sync before it (the last begun before
// the kill, or a later one) to the kill.
func (h *haReplica) resendBound(begun int, addedAtKill int64) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	from := int64(0)
	if begun >= 2 {
		from = h.atSync[begun-2]
	}
	return addedAtKill + 1 - from
}

func (h *haReplica) begun() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.atSync)
}

// A primary, its replica and three Sentinels; two replicas of the gateway
// count on the redis-sentinel:// URL, every 100 ms. The primary is killed
// mid-run: the Sentinels promote the replica; each store says so once (the
// unreachable line, then the failed-over line naming the new primary, never
// the password) and goes on counting there; the day's count at the new
// primary is what both added: nothing lost, over by at most what a lost
// answer sent twice (invariant 22).
func TestSentinelFailoverKeepsCounting(t *testing.T) {
	const pw = "s3cret-ha-pw"
	ha := testkit.StartRedisSentinel(t, pw)
	const every = 100 * time.Millisecond
	key := dayKey("plans:acme", time.Now())
	reps := []*haReplica{openHA(t, ha.URL(), "plans:acme", every), openHA(t, ha.URL(), "plans:acme", every)}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, h := range reps {
		h.count(stop, &wg)
	}
	defer func() { close(stop); wg.Wait() }()
	eventually(t, wait, "both replicas' counts at the primary", func() bool {
		n, _ := ha.Primary.Do("GET", key)
		v, _ := strconv.Atoi(n)
		return v > 100 && reps[0].c.Total(time.Now()) > reps[0].added.Load() && reps[1].c.Total(time.Now()) > reps[1].added.Load()
	})

	begun := []int{reps[0].begun(), reps[1].begun()}
	killed := time.Now()
	ha.Primary.Kill()
	slack := reps[0].resendBound(begun[0], reps[0].added.Load()) + reps[1].resendBound(begun[1], reps[1].added.Load())
	eventually(t, 60*time.Second, "the Sentinels name the replica", func() bool {
		for _, a := range ha.PrimaryAddrs() {
			if a != ha.Replica.Addr() {
				return false
			}
		}
		return true
	})
	t.Logf("the Sentinels named the replica %s after the kill", time.Since(killed))
	for i, h := range reps {
		eventually(t, wait, "replica "+strconv.Itoa(i)+"'s failed-over line", func() bool { return h.log.count("failed over") >= 1 })
	}
	t.Logf("both stores counting at the new primary %s after the kill", time.Since(killed))
	before := reps[0].added.Load() + reps[1].added.Load()
	eventually(t, wait, "more counted at the new primary", func() bool {
		return reps[0].added.Load()+reps[1].added.Load() > before+200
	})
	close(stop)
	wg.Wait()
	stop = make(chan struct{})
	settled(t, reps[0].clock, reps[1].clock)

	added := reps[0].added.Load() + reps[1].added.Load()
	n, err := ha.Replica.Do("GET", key)
	held, _ := strconv.ParseInt(n, 10, 64)
	if err != nil || held < added || held > added+slack {
		t.Fatalf("the new primary holds %q (%v) for %d added: want %d to %d (a lost answer's resend at most)", n, err, added, added, added+slack)
	}
	t.Logf("%d added, the new primary holds %d: %d counted twice (a lost answer), %d at most", added, held, held-added, slack)
	for i, h := range reps {
		if got := h.c.Total(time.Now()); got != held {
			t.Fatalf("replica %d's total %d, the store holds %d", i, got, held)
		}
		s := h.log.String()
		for line, want := range map[string]int{"shared counter store unreachable": 1, "shared counter store failed over": 1, "reachable again": 0} {
			if got := h.log.count(line); got != want {
				t.Fatalf("replica %d: %q written %d times for one failover, want %d:\n%s", i, line, got, want, s)
			}
		}
		if !strings.Contains(s, "primary="+ha.Replica.Addr()) || !strings.Contains(s, "previous="+ha.Primary.Addr()) || strings.Contains(s, pw) {
			t.Fatalf("replica %d: the failed-over line must name the new primary and the previous one, never the password:\n%s", i, s)
		}
	}
}

// A Redis Cluster of three masters, found from one seed: two replicas
// count day counters whose keys lie in every master's slots, and a Running
// counter, in one pipeline per sync; each key holds what both added, on
// the master of its slot, and each replica sees the sum.
func TestClusterCountsAcrossSlots(t *testing.T) {
	cl := testkit.StartRedisCluster(t, 3)
	const every = 100 * time.Millisecond
	seed := "redis-cluster://" + cl.Nodes[1].Addr()
	clocks := []*syncClock{{}, {}}
	a := openT(t, seed, every, nil, clocks[0].now)
	b := openT(t, seed, every, nil, clocks[1].now)
	now := time.Now()
	owners := map[int]bool{}
	var names []string
	for i := 0; len(owners) < 3 || len(names) < 6; i++ {
		if i == 1000 {
			t.Fatalf("1000 names, their day keys on %d masters only", len(owners))
		}
		name := "acme-" + strconv.Itoa(i)
		_, node, err := cl.Do("GET", dayKey(name, now))
		if err != nil {
			t.Fatal(err)
		}
		owners[node] = true
		names = append(names, name)
	}
	ra, rb := a.Counter("rate", quota.Running), b.Counter("rate", quota.Running)
	for i, name := range names {
		a.Counter(name, quota.Day).Add(now, int64(i+1))
		b.Counter(name, quota.Day).Add(now, 100)
	}
	settled(t, clocks...) // the Running counters' first reads: a new start
	ra.Add(time.Now(), 7)
	rb.Add(time.Now(), 5)
	for i, name := range names {
		want := strconv.Itoa(i + 1 + 100)
		eventually(t, wait, name+"'s day key holds both replicas' counts", func() bool {
			v, _, _ := cl.Do("GET", dayKey(name, now))
			return v == want
		})
	}
	eventually(t, wait, "each replica sees the other's spending", func() bool {
		n := time.Now()
		return ra.Total(n) == 12 && rb.Total(n) == 12
	})
	settled(t, clocks...)
	for i, name := range names {
		ca, cb := a.Counter(name, quota.Day), b.Counter(name, quota.Day)
		if ta, tb := ca.Total(time.Now()), cb.Total(time.Now()); ta != int64(i+101) || tb != ta {
			t.Fatalf("%s: totals %d and %d, want %d", name, ta, tb, i+101)
		}
	}
	if ta, tb := ra.Total(time.Now()), rb.Total(time.Now()); ta != 12 || tb != 12 {
		t.Fatalf("running totals %d, %d after more syncs, want 12 (nothing learned twice)", ta, tb)
	}
	if v, _, _ := cl.Do("HGET", "flexway:rate:running", "n"); v != "12" {
		t.Fatalf("the running hash holds %q, want 12", v)
	}
	t.Logf("%d day keys over the 3 masters' slots, found from one seed", len(names))
}
