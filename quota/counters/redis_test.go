package counters

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/flexway/flexway/quota"
)

// logBuf is a slog destination the test reads.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuf) count(s string) int { return strings.Count(l.String(), s) }

func newLog() (*slog.Logger, *logBuf) {
	b := &logBuf{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

// wait bounds a wait for something the store does by itself: far above
// what it takes on a loaded machine, only reached when it never happens.
const wait = 30 * time.Second

// eventually waits until cond holds, failing after d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func openT(t *testing.T, url string, sync time.Duration, log *slog.Logger, now func() time.Time) *Redis {
	t.Helper()
	if now == nil {
		now = time.Now
	}
	r, err := open(url, sync, log, now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func redisInt(t *testing.T, srv *testkit.Redis, key string) int64 {
	t.Helper()
	v, err := srv.Do("GET", key)
	if err != nil || v == "$-1" {
		return 0
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

func dayKey(name string, now time.Time) string {
	return "flexway:" + name + ":day:" + now.UTC().Format("2006-01-02")
}

// Two replicas on one Redis: each counts its own requests, and both see the
// sum within a sync or two.
func TestTwoReplicasHoldOneTotal(t *testing.T) {
	srv := testkit.StartRedis(t)
	const sync = 200 * time.Millisecond
	a := openT(t, srv.URL(), sync, nil, nil)
	b := openT(t, srv.URL(), sync, nil, nil)
	ca, cb := a.Counter("plans:acme", quota.Day), b.Counter("plans:acme", quota.Day)
	if a.Counter("plans:acme", quota.Day) != ca {
		t.Fatal("Counter made a second counter for the same name and window")
	}
	now := time.Now()
	for i := 0; i < 100; i++ {
		ca.Add(now, 1)
	}
	cb.Add(now, 50)
	if got := ca.Total(now); got < 100 {
		t.Fatalf("replica a's total %d right after its own adds: its own count must be exact", got)
	}
	start := time.Now()
	eventually(t, wait, "both replicas see 150", func() bool {
		n := time.Now()
		return ca.Total(n) == 150 && cb.Total(n) == 150
	})
	t.Logf("both replicas saw the sum after %s (sync %s)", time.Since(start), sync)
	if got := redisInt(t, srv, dayKey("plans:acme", now)); got != 150 {
		t.Fatalf("redis key %s = %d, want 150", dayKey("plans:acme", now), got)
	}
	ttl, _ := srv.Do("TTL", dayKey("plans:acme", now))
	sec, _ := strconv.Atoi(strings.TrimPrefix(ttl, ":"))
	if sec <= 0 || sec > 25*3600 {
		t.Fatalf("the day key's TTL is %q: it must end a little after the day", ttl)
	}
	// A counter of another window, another name: counted apart.
	if got := a.Counter("plans:acme", quota.Month).Total(now); got != 0 {
		t.Fatalf("the month counter saw %d before any Add", got)
	}
}

// Redis killed mid-run: Add and Total never wait, one log line (not one per
// sync), and once Redis is back the deltas kept are sent.
func TestRedisDownKeepsDecidingAndReconciles(t *testing.T) {
	srv := testkit.StartRedis(t)
	const sync = 100 * time.Millisecond
	logA, bufA := newLog()
	clocks := []*syncClock{{}, {}}
	a := openT(t, srv.URL(), sync, logA, clocks[0].now)
	b := openT(t, srv.URL(), sync, nil, clocks[1].now)
	ca, cb := a.Counter("acme", quota.Day), b.Counter("acme", quota.Day)
	now := time.Now()
	ca.Add(now, 1)
	eventually(t, wait, "the first delta in redis", func() bool { return redisInt(t, srv, dayKey("acme", now)) == 1 })

	srv.Kill()
	// While Redis is down (several syncs): every call returns at once.
	var slowest time.Duration
	deadline := time.Now().Add(1500 * time.Millisecond)
	n := 0
	for time.Now().Before(deadline) {
		t0 := time.Now()
		ca.Add(t0, 1)
		cb.Add(t0, 1)
		ca.Total(t0)
		cb.Total(t0)
		if d := time.Since(t0); d > slowest {
			slowest = d
		}
		n++
		if n%100 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	// Atomics: microseconds. A call that waited on Redis would wait a
	// round trip's timeout (1 s): the bound is under it, as wide as that
	// allows for a loaded machine.
	if slowest > 900*time.Millisecond {
		t.Fatalf("an Add+Total took %s while redis was down", slowest)
	}
	if got := ca.Total(time.Now()); got < int64(n+1) {
		t.Fatalf("replica a's total %d while redis is down: it must keep its own %d", got, n+1)
	}
	eventually(t, wait, "the unreachable line", func() bool { return bufA.count("shared counter store unreachable") >= 1 })
	settled(t, clocks...) // more failed syncs: still one line
	if got := bufA.count("shared counter store unreachable"); got != 1 {
		t.Fatalf("%d unreachable lines in 2s of outage, want 1 (a minute apart):\n%s", got, bufA.String())
	}
	if !strings.Contains(bufA.String(), "store="+srv.Addr()) {
		t.Fatalf("the line must name the store's host %s:\n%s", srv.Addr(), bufA.String())
	}

	srv.Restart() // empty: what was sent before is gone, what was kept comes
	want := int64(2 * n)
	eventually(t, wait, "the deltas kept while down reach redis", func() bool {
		return redisInt(t, srv, dayKey("acme", now)) == want
	})
	// The 1 sent before the kill died with that Redis: both replicas see
	// what the new one holds (their own count exact, the other's from it).
	eventually(t, wait, "both replicas see the sum", func() bool {
		now := time.Now()
		return ca.Total(now) == want && cb.Total(now) == want
	})
	eventually(t, wait, "the reachable-again line", func() bool { return bufA.count("shared counter store reachable again") == 1 })
	// Nothing sent twice; no more lines.
	settled(t, clocks...)
	if got := bufA.count("shared counter store unreachable"); got != 1 {
		t.Fatalf("%d unreachable lines, want 1:\n%s", got, bufA.String())
	}
	if got := redisInt(t, srv, dayKey("acme", now)); got != want {
		t.Fatalf("redis holds %d after more syncs, want %d: a delta was sent twice", got, want)
	}
}

// The URL's password is never logged; the host is.
func TestUnreachableLogNamesHostNotPassword(t *testing.T) {
	port := testkit.FreePort(t) // nothing listens there
	log, buf := newLog()
	r := openT(t, "redis://flexway:s3cret-pw@127.0.0.1:"+strconv.Itoa(port)+"/0", 50*time.Millisecond, log, nil)
	r.Counter("acme", quota.Day).Add(time.Now(), 1)
	eventually(t, wait, "the unreachable line", func() bool { return buf.count("unreachable") == 1 })
	if s := buf.String(); strings.Contains(s, "s3cret") || !strings.Contains(s, "127.0.0.1:"+strconv.Itoa(port)) {
		t.Fatalf("the line must name the host and not the password:\n%s", s)
	}
	if _, err := Open("redis://u:s3cret-pw@[::1", time.Second, log); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("a bad URL: err %v (must fail, without the password)", err)
	}
}

// The day rolls over at UTC midnight, whatever the time's location; the
// month at the first of the month, UTC.
func TestWindowsRollOverInUTC(t *testing.T) {
	srv := testkit.StartRedis(t)
	var clock atomic.Pointer[time.Time]
	set := func(tm time.Time) { clock.Store(&tm) }
	now := func() time.Time { return *clock.Load() }
	paris := time.FixedZone("UTC+2", 2*3600)
	before := time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC).In(paris) // 01:59:59 in the zone, a new year there
	after := before.Add(time.Second)
	set(before)
	r := openT(t, srv.URL(), 50*time.Millisecond, nil, now)
	day, month := r.Counter("acme", quota.Day), r.Counter("acme", quota.Month)
	day.Add(before, 5)
	month.Add(before, 5)
	if day.Total(before) != 5 || month.Total(before) != 5 {
		t.Fatalf("totals %d, %d before midnight, want 5", day.Total(before), month.Total(before))
	}
	eventually(t, wait, "the day's key", func() bool {
		return redisInt(t, srv, "flexway:acme:day:2026-12-31") == 5 && redisInt(t, srv, "flexway:acme:month:2026-12") == 5
	})
	if got := day.Total(after); got != 0 {
		t.Fatalf("day total %d at 00:00:00 UTC, want 0 (a new day)", got)
	}
	if got := month.Total(after); got != 0 {
		t.Fatalf("month total %d on the first of the month UTC, want 0", got)
	}
	set(after)
	day.Add(after, 2)
	eventually(t, wait, "the new day's key", func() bool {
		return redisInt(t, srv, "flexway:acme:day:2027-01-01") == 2 && day.Total(after) == 2
	})
	if got := redisInt(t, srv, "flexway:acme:day:2026-12-31"); got != 5 {
		t.Fatalf("yesterday's key %d after midnight, want 5", got)
	}
	// One second before midnight, in the zone's own clock: still the same UTC day.
	if got := day.Total(time.Date(2027, 1, 1, 23, 59, 59, 0, time.UTC).In(paris)); got != 2 {
		t.Fatalf("day total %d at 23:59:59 UTC (01:59:59 the next day in the zone), want 2", got)
	}
}

// Add and Total allocate nothing, in every window.
func TestAddTotalAllocateNothing(t *testing.T) {
	for _, s := range []quota.Store{NewLocal(), mustOpen(t)} {
		for _, w := range []quota.Window{quota.Day, quota.Month, quota.Running} {
			c := s.Counter("acme", w)
			now := time.Now()
			if n := testing.AllocsPerRun(1000, func() {
				c.Add(now, 3)
				_ = c.Total(now)
			}); n != 0 {
				t.Fatalf("%T window %d: %v allocations per Add+Total", s, w, n)
			}
		}
		s.Close()
	}
}

func mustOpen(t *testing.T) *Redis {
	// No server: the hot path does not depend on one.
	return openT(t, "redis://127.0.0.1:"+strconv.Itoa(testkit.FreePort(t)), time.Hour, nil, nil)
}

// Local: a window's count, alone, rolling over like the shared one; a
// Running count never rolls over.
func TestLocalCounts(t *testing.T) {
	l := NewLocal()
	defer l.Close()
	c := l.Counter("acme", quota.Day)
	t0 := time.Unix(1_800_000_000, 0)
	c.Add(t0, 4)
	c.Add(t0.Add(time.Hour), 1)
	if got := c.Total(t0); got != 5 {
		t.Fatalf("total %d, want 5", got)
	}
	if got := c.Total(t0.Add(24 * time.Hour)); got != 0 {
		t.Fatalf("the next day's total %d, want 0", got)
	}
	c.Add(t0.Add(48*time.Hour), 7) // the slot of t0's window: a new count
	if got := c.Total(t0.Add(48 * time.Hour)); got != 7 {
		t.Fatalf("two days later: total %d, want 7", got)
	}
	r := l.Counter("acme", quota.Running)
	r.Add(t0, 4)
	r.Add(t0.Add(1500*time.Millisecond), 1)
	if got := r.Total(t0.Add(time.Hour)); got != 5 {
		t.Fatalf("running total %d an hour later, want 5", got)
	}
}

func TestWindowTags(t *testing.T) {
	for _, cur := range []int64{0, 1, 20000, 1_800_000_000, 65534, 65535, 65536} {
		for _, d := range []int64{-3, -1, 0, 1, 2} {
			w := cur + d
			if w < 0 {
				continue
			}
			if got := windowOfTag(tagOf(w), cur); got != w {
				t.Fatalf("windowOfTag(tagOf(%d), %d) = %d", w, cur, got)
			}
		}
	}
	if k := windowKey("p:acme", quota.Month, windowOf(quota.Month, time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC))); k != "flexway:p:acme:month:2026-12" {
		t.Fatal(k)
	}
	if e := windowEnd(quota.Month, windowOf(quota.Month, time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC))); !e.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatal(e)
	}
}

// syncClock is a store's clock that counts its reconciliations: reconcile
// reads it once, as it begins, and they run one after the other. A count
// read at t means every reconciliation after it began after t, and the
// (count+1)-th is over once the count reaches count+2.
type syncClock struct{ n atomic.Int64 }

func (c *syncClock) now() time.Time { c.n.Add(1); return time.Now() }

func syncCounts(cs []*syncClock) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.n.Load()
	}
	return out
}

func syncsPast(cs []*syncClock, base []int64) bool {
	for i, c := range cs {
		if c.n.Load() < base[i]+2 {
			return false
		}
	}
	return true
}

// settled waits until every replica's spending before the call is in
// Redis and every replica has read Redis since: a whole reconciliation of
// each after the call, then another of each after those. It counts
// reconciliations, not time: a loaded machine only makes it longer.
func settled(t *testing.T, cs ...*syncClock) {
	t.Helper()
	for range 2 {
		base := syncCounts(cs)
		eventually(t, 60*time.Second, "a whole reconciliation of each replica", func() bool { return syncsPast(cs, base) })
	}
}

// Running counters (a rate bucket's spending): two replicas on one Redis,
// sync 1s, spending at any moment of any second: each one's total, once
// the spending stops, is exactly what both spent (nothing lost to a second
// that ended before the other replica read it), and it never goes down.
func TestRunningLearnsWhateverTheSecond(t *testing.T) {
	srv := testkit.StartRedis(t)
	const every = time.Second
	clocks := []*syncClock{{}, {}}
	a := openT(t, srv.URL(), every, nil, clocks[0].now)
	b := openT(t, srv.URL(), every, nil, clocks[1].now)
	ca, cb := a.Counter("kafka:rate:acme", quota.Running), b.Counter("kafka:rate:acme", quota.Running)
	// A counter's first read is a new start (what the others spent before
	// is not learned): both learn one of the other's first.
	for ca.Total(time.Now()) < 2 || cb.Total(time.Now()) < 2 {
		ca.Add(time.Now(), 1)
		cb.Add(time.Now(), 1)
		time.Sleep(50 * time.Millisecond)
	}
	settled(t, clocks...) // the last of those learned
	baseA, baseB := ca.Total(time.Now()), cb.Total(time.Now())
	var spent atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range []quota.Counter{ca, cb} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				n := int64(1 + (k*7+i)%13)
				spent.Add(n)
				c.Add(time.Now(), n)
				time.Sleep(3 * time.Millisecond)
			}
		}()
	}
	lastA, lastB := int64(0), int64(0)
	end := time.Now().Add(4 * time.Second)
	for time.Now().Before(end) {
		ta, tb := ca.Total(time.Now())-baseA, cb.Total(time.Now())-baseB
		if ta < lastA || tb < lastB {
			t.Fatalf("a running total went down: %d -> %d, %d -> %d", lastA, ta, lastB, tb)
		}
		if s := spent.Load(); ta > s || tb > s {
			t.Fatalf("totals %d, %d above what was spent (%d)", ta, tb, s)
		}
		lastA, lastB = ta, tb
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	total := spent.Load()
	settled(t, clocks...)
	if ta, tb := ca.Total(time.Now())-baseA, cb.Total(time.Now())-baseB; ta != total || tb != total {
		t.Fatalf("once the spending stopped and both reconciled: %d, %d, want %d", ta, tb, total)
	}
	settled(t, clocks...)
	if ta, tb := ca.Total(time.Now())-baseA, cb.Total(time.Now())-baseB; ta != total || tb != total {
		t.Fatalf("after more syncs: %d, %d, want %d (nothing learned twice)", ta, tb, total)
	}
}

// A Running counter's first read, and a Redis that lost its data: what the
// hash held before is the past (not charged); what the others add after is
// learned, in the new hash.
func TestRunningNewStartAndLostHash(t *testing.T) {
	srv := testkit.StartRedis(t)
	const every = 100 * time.Millisecond
	clocks := []*syncClock{{}, {}}
	a := openT(t, srv.URL(), every, nil, clocks[0].now)
	ca := a.Counter("r", quota.Running)
	ca.Add(time.Now(), 1000) // spent before b ever looked
	eventually(t, wait, "a's spending in redis", func() bool {
		n, _ := srv.Do("HGET", "flexway:r:running", "n")
		return n == "1000"
	})
	b := openT(t, srv.URL(), every, nil, clocks[1].now)
	cb := b.Counter("r", quota.Running)
	settled(t, clocks...) // b's first reads
	if got := cb.Total(time.Now()); got != 0 {
		t.Fatalf("b's total %d: what a spent before b's first read is not b's to charge", got)
	}
	ca.Add(time.Now(), 7)
	eventually(t, wait, "b learns a's next spending", func() bool { return cb.Total(time.Now()) == 7 })

	srv.Restart() // empty: the hash and its epoch are gone
	cb.Add(time.Now(), 5)
	ca.Add(time.Now(), 3)
	eventually(t, wait, "each learns the other's spending in the new hash", func() bool {
		now := time.Now()
		return ca.Total(now) == 1000+7+3+5 && cb.Total(now) == 7+5+3
	})
	settled(t, clocks...)
	if ta, tb := ca.Total(time.Now()), cb.Total(time.Now()); ta != 1015 || tb != 15 {
		t.Fatalf("after more syncs: %d, %d, want 1015, 15 (nothing learned twice)", ta, tb)
	}
}

// Redis down under Running counters: nothing blocks, one line, and once it
// is back a replica sends only its last sync's spending: what it spent
// alone during the outage is over with its time, not charged to the others
// at once.
func TestRunningRedisDownGivesUpTheOld(t *testing.T) {
	srv := testkit.StartRedis(t)
	const every = 500 * time.Millisecond
	logA, bufA := newLog()
	clocks := []*syncClock{{}, {}}
	syncsA := &clocks[0].n // a's reconciliations begun
	a := openT(t, srv.URL(), every, logA, clocks[0].now)
	b := openT(t, srv.URL(), every, nil, clocks[1].now)
	ca, cb := a.Counter("r", quota.Running), b.Counter("r", quota.Running)
	// b's first read is a new start: a spends until b has learned some.
	eventually(t, wait, "b learns a's spending", func() bool {
		ca.Add(time.Now(), 1)
		return cb.Total(time.Now()) > 0
	})
	settled(t, clocks...) // the last of it learned
	base, mine := cb.Total(time.Now()), ca.Total(time.Now())

	srv.Kill()
	t0 := time.Now()
	ca.Add(t0, 10000) // spent alone, during the outage
	begun := syncsA.Load()
	// Under a round trip's timeout (1 s): the calls did not wait on Redis.
	if total := ca.Total(t0); total != mine+10000 || time.Since(t0) > 900*time.Millisecond {
		t.Fatalf("Add+Total while redis is down: total %d after %v", total, time.Since(t0))
	}
	eventually(t, wait, "the unreachable line", func() bool { return bufA.count("shared counter store unreachable") == 1 })
	// Two whole failed syncs after the spending (the third begun: they run
	// one after the other), however long each took on a busy machine: the
	// outage's spending is given up at the second (settle).
	eventually(t, 60*time.Second, "two failed syncs after the outage's spending", func() bool { return syncsA.Load() >= begun+3 })
	srv.Restart()
	ca.Add(time.Now(), 5)
	eventually(t, wait, "b learns a's spending after the outage", func() bool { return cb.Total(time.Now()) >= base+5 })
	settled(t, clocks...)
	if got := cb.Total(time.Now()); got != base+5 {
		t.Fatalf("b's total grew by %d, want 5: a's 10000 spent alone during the outage is not b's to charge", got-base)
	}
	if got := ca.Total(time.Now()); got != mine+10005 {
		t.Fatalf("a's own total %d, want %d (its own count is exact)", got, mine+10005)
	}
}
