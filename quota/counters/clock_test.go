package counters

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/flexway/flexway/quota"
)

// Issue 34.5: a Running counter carries its bucket's clock between
// replicas. A's bucket in debt (its clock 10 minutes ahead) is published
// in the hash (field t), which then lives until that debt is paid; B's
// bucket, made later, is raised to it at B's first read, before B says
// the counter read (Ready): B's first request is judged on A's debt. A
// bucket made again for a counter already read is raised at once. The
// spending itself is not learned twice (B's total stays its own), and a
// clock behind now (a paid bucket) is not published.
func TestRunningCarriesTheClock(t *testing.T) {
	srv := testkit.StartRedis(t)
	const every = 100 * time.Millisecond
	a := openT(t, srv.URL(), every, nil, nil)
	ca := a.Counter("r", quota.Running)
	var tatA atomic.Int64
	ca.(quota.Clocked).Watch(&tatA)
	ahead := time.Now().Add(10 * time.Minute).UnixNano()
	tatA.Store(ahead)
	ca.Add(time.Now(), 1000)
	want := strconv.FormatInt(ahead, 10)
	eventually(t, wait, "a's clock in redis", func() bool {
		v, _ := srv.Do("HGET", "flexway:r:running", "t")
		return v == want
	})
	ttl, _ := srv.Do("PTTL", "flexway:r:running")
	if ms, _ := strconv.ParseInt(strings.TrimPrefix(ttl, ":"), 10, 64); ms < (9 * time.Minute).Milliseconds() {
		t.Errorf("the hash expires in %s ms: want past the debt (10 min)", ttl)
	}

	b := openT(t, srv.URL(), every, nil, nil)
	cb := b.Counter("r", quota.Running)
	var tatB atomic.Int64
	cb.(quota.Clocked).Watch(&tatB)
	eventually(t, wait, "b's first read", func() bool { return quota.CounterReady(cb) })
	if got := tatB.Load(); got != ahead {
		t.Errorf("b's bucket after its first read: clock %d, want a's %d", got, ahead)
	}
	var again atomic.Int64
	cb.(quota.Clocked).Watch(&again)
	if got := again.Load(); got != ahead {
		t.Errorf("a bucket made again on b: clock %d, want a's %d at once", got, ahead)
	}
	if got := cb.Total(time.Now()); got != 0 {
		t.Errorf("b's total %d: a's spending before b's first read is carried by the clock, not the count", got)
	}

	// A paid bucket's clock (behind now) is not published.
	cp := a.Counter("paid", quota.Running)
	var tatP atomic.Int64
	cp.(quota.Clocked).Watch(&tatP)
	tatP.Store(time.Now().Add(-time.Second).UnixNano())
	cp.Add(time.Now(), 5)
	eventually(t, wait, "the paid counter's spending in redis", func() bool {
		v, _ := srv.Do("HGET", "flexway:paid:running", "n")
		return v == "5"
	})
	if v, _ := srv.Do("HGET", "flexway:paid:running", "t"); v != "$-1" && v != "" {
		t.Errorf("a paid bucket's clock published: %q", v)
	}
}

// The clock's script in a Redis Cluster: each Running hash's script goes
// to the master of its slot, in the sync's one pipeline; a bucket made on
// the other replica is raised to the clock at its first read, whichever
// master holds it.
func TestClusterCarriesTheClock(t *testing.T) {
	cl := testkit.StartRedisCluster(t, 3)
	const every = 100 * time.Millisecond
	seed := "redis-cluster://" + cl.Nodes[0].Addr()
	a := openT(t, seed, every, nil, nil)
	b := openT(t, seed, every, nil, nil)
	ahead := time.Now().Add(time.Minute).UnixNano()
	owners := map[int]bool{}
	var names []string
	for i := 0; len(owners) < 3 || len(names) < 6; i++ {
		if i == 1000 {
			t.Fatalf("1000 names, their hashes on %d masters only", len(owners))
		}
		name := "clock-" + strconv.Itoa(i)
		if _, node, err := cl.Do("HGET", runningKey(name), "t"); err != nil {
			t.Fatal(err)
		} else {
			owners[node] = true
		}
		names = append(names, name)
	}
	for _, name := range names {
		var tat atomic.Int64
		ca := a.Counter(name, quota.Running)
		ca.(quota.Clocked).Watch(&tat)
		tat.Store(ahead)
		ca.Add(time.Now(), 10)
	}
	want := strconv.FormatInt(ahead, 10)
	for _, name := range names {
		eventually(t, wait, name+"'s clock on its master", func() bool {
			v, _, _ := cl.Do("HGET", runningKey(name), "t")
			return v == want
		})
	}
	for _, name := range names {
		var tat atomic.Int64
		cb := b.Counter(name, quota.Running)
		cb.(quota.Clocked).Watch(&tat)
		eventually(t, wait, name+"'s first read on b", func() bool { return quota.CounterReady(cb) })
		if got := tat.Load(); got != ahead {
			t.Errorf("%s: b's bucket clock %d after its first read, want %d", name, got, ahead)
		}
	}
}

// cmdCalls is how many times the store ran cmd (INFO commandstats).
func cmdCalls(t *testing.T, srv *testkit.Redis, cmd string) int {
	t.Helper()
	info, err := srv.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
			return n
		}
	}
	return 0
}

// The clock's script is sent whole once, then by its hash (EVALSHA): a
// principal in debt publishes its clock at every sync where it moved. A
// store that lost the script (SCRIPT FLUSH here; a restart or a failover
// alike) answers NOSCRIPT: that clock is not lost, it is published at the
// next sync, sent whole, and by the hash again after that.
func TestClockScriptSentByHash(t *testing.T) {
	srv := testkit.StartRedis(t)
	log, logs := newLog()
	a := openT(t, srv.URL(), 50*time.Millisecond, log, nil)
	c := a.Counter("h", quota.Running)
	var tat atomic.Int64
	c.(quota.Clocked).Watch(&tat)
	publish := func(d time.Duration) {
		t.Helper()
		v := time.Now().Add(d).UnixNano()
		tat.Store(v)
		c.Add(time.Now(), 1)
		want := strconv.FormatInt(v, 10)
		eventually(t, wait, "the clock "+want+" in redis", func() bool {
			got, _ := srv.Do("HGET", "flexway:h:running", "t")
			return got == want
		})
	}
	publish(10 * time.Minute)
	if n := cmdCalls(t, srv, "eval"); n != 1 {
		t.Fatalf("the first clock: %d EVAL, want 1", n)
	}
	for i := 1; i <= 3; i++ {
		publish(10*time.Minute + time.Duration(i)*time.Second)
	}
	if n, sha := cmdCalls(t, srv, "eval"), cmdCalls(t, srv, "evalsha"); n != 1 || sha < 3 {
		t.Fatalf("three clocks more: %d EVAL and %d EVALSHA, want 1 and at least 3", n, sha)
	}
	if _, err := srv.Do("SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	publish(11 * time.Minute) // NOSCRIPT, then whole
	if n := cmdCalls(t, srv, "eval"); n != 2 {
		t.Fatalf("after SCRIPT FLUSH: %d EVAL, want 2 (the script sent whole again once)", n)
	}
	sha := cmdCalls(t, srv, "evalsha")
	publish(12 * time.Minute)
	if n, s := cmdCalls(t, srv, "eval"), cmdCalls(t, srv, "evalsha"); n != 2 || s <= sha {
		t.Fatalf("the next clock: %d EVAL and %d EVALSHA (%d before), want by the hash again", n, s, sha)
	}
	if strings.Contains(logs.String(), "NOSCRIPT") || strings.Contains(logs.String(), "unreachable") {
		t.Errorf("a lost script is not a failure of the store: %s", logs.String())
	}
}
