package quota

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Unix(1_800_000_000, 0)

// A bucket holds rate × window: spending within it is free, past it the
// excess is the time to pay it back at the rate.
func TestBucketDepthAndExcess(t *testing.T) {
	var b Bucket
	const rate, window = 1000, int64(time.Second) // 1000 units/s, 1000 units deep
	if d := b.Spend(t0, 1000, rate, window); d > 0 {
		t.Fatalf("the bucket's depth throttled: %v", time.Duration(d))
	}
	if d := b.Spend(t0, 500, rate, window); time.Duration(d) != 500*time.Millisecond {
		t.Fatalf("500 past the depth: %v, want 500ms", time.Duration(d))
	}
	if d := b.Debt(t0.Add(250*time.Millisecond), rate, window); time.Duration(d) != 250*time.Millisecond {
		t.Fatalf("debt after 250ms: %v", time.Duration(d))
	}
	if d := b.Debt(t0.Add(2*time.Second), rate, window); d > 0 {
		t.Fatalf("debt after 2s: %v", time.Duration(d))
	}
	if !b.Paid(t0.Add(1500 * time.Millisecond)) {
		t.Error("not paid after 1.5 s")
	}
	var free Bucket
	if d := free.Spend(t0, 1<<40, 0, window); d != 0 || !free.Paid(t0) {
		t.Error("rate 0 (no bound) charged")
	}
}

// Over a long run a spender that waits each throttle out is held to the rate.
func TestBucketHoldsRate(t *testing.T) {
	var b Bucket
	const rate, window = 1 << 20, int64(time.Second)
	now, spent := t0, int64(0)
	end := t0.Add(100 * time.Second)
	for now.Before(end) {
		spent += 64 << 10
		if d := b.Spend(now, 64<<10, rate, window); d > 0 {
			now = now.Add(time.Duration(d))
		}
	}
	got := float64(spent) / 100
	if got < 0.99*rate || got > 1.02*rate {
		t.Errorf("held to %.0f/s, want %d/s", got, rate)
	}
}

// From many goroutines at once (the loops), every unit is charged once.
func TestBucketConcurrentSpends(t *testing.T) {
	var b Bucket
	const rate, window = int64(1e9), int64(time.Second)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10000; i++ {
				b.Spend(t0, 1000, rate, window)
			}
		}()
	}
	wg.Wait()
	// 8e7 units at 1e9/s: 80 ms of debt exactly.
	if d := b.tat.Load() - t0.UnixNano(); d != int64(80*time.Millisecond) {
		t.Errorf("debt %v, want 80ms", time.Duration(d))
	}
}

// A new rate (a reload) keeps what was spent and not paid, counted at the
// new rate.
func TestBucketRerateKeepsDebt(t *testing.T) {
	var b Bucket
	w := int64(time.Second)
	b.Spend(t0, 2000, 1000, w) // 2 s of debt at 1000/s: 2000 units owed
	at := t0.Add(500 * time.Millisecond)
	// 1500 units still owed; at 100/s that is 15 s, plus 100 units (1 s).
	if d := b.Spend(at, 100, 100, w); time.Duration(d) != 15*time.Second {
		t.Errorf("excess after the rate is lowered: %v, want 15s", time.Duration(d))
	}
}

// fakeCounter is a shared count: this replica's adds plus others'.
type fakeCounter struct{ mine, others atomic.Int64 }

func (c *fakeCounter) Add(_ time.Time, n int64)       { c.mine.Add(n) }
func (c *fakeCounter) Total(time.Time) int64          { return c.mine.Load() + c.others.Load() }
func (c *fakeCounter) Counter(string, Window) Counter { return c }
func (c *fakeCounter) Close() error                   { return nil }

// With a shared counter, what the other replicas spent is charged too:
// the replicas hold the rate together.
func TestBucketSharedCounter(t *testing.T) {
	var b Bucket
	c := &fakeCounter{}
	b.SetCounter(c)
	w := int64(time.Second)
	if d := b.Spend(t0, 500, 1000, w); d > 0 {
		t.Fatalf("throttled within the depth: %v", time.Duration(d))
	}
	c.others.Add(1000) // another replica spent 1000, learned now
	if d := b.Spend(t0, 100, 1000, w); time.Duration(d) != 600*time.Millisecond {
		t.Errorf("excess with the other replica's spending: %v, want 600ms", time.Duration(d))
	}
	if c.mine.Load() != 600 {
		t.Errorf("the counter holds %d of ours, want 600", c.mine.Load())
	}
}

// The others' spending is charged as it is learned, whatever second it was
// spent in, from the bucket's last look: a bucket idle here while the
// others spent at the rate owes nothing for it; one that learns, a moment
// after its last spend, of more than the rate allows owes it at once.
func TestBucketSharedChargedFromLastLook(t *testing.T) {
	const rate, w = 1000, int64(time.Second)
	var idle Bucket
	ci := &fakeCounter{}
	idle.SetCounter(ci)
	idle.Spend(t0, 100, rate, w)
	ci.others.Add(10 * rate) // spent elsewhere over the next 10 s, learned late
	if d := idle.Spend(t0.Add(10*time.Second), 100, rate, w); d > 0 {
		t.Errorf("idle here for 10 s while the others spent the rate: throttled %v", time.Duration(d))
	}
	var busy Bucket
	cb := &fakeCounter{}
	busy.SetCounter(cb)
	busy.Spend(t0, 100, rate, w)
	cb.others.Add(10 * rate) // learned 100 ms after the last spend
	d := busy.Spend(t0.Add(100*time.Millisecond), 100, rate, w)
	if want := 9100 * time.Millisecond; time.Duration(d) != want {
		t.Errorf("10 s of the others' spending learned at once: excess %v, want %v", time.Duration(d), want)
	}
	if cb.mine.Load() != 200 {
		t.Errorf("the counter holds %d of ours, want 200", cb.mine.Load())
	}
}

// A counter's history before SetCounter is not the bucket's: a tenant made
// again (forgotten once paid) starts from what the counter holds then.
func TestBucketSetCounterStartsFromTotal(t *testing.T) {
	c := &fakeCounter{}
	c.others.Add(1 << 40) // what the replicas spent before
	var b Bucket
	b.SetCounter(c)
	if d := b.Spend(time.Now(), 100, 1000, int64(time.Second)); d > 0 {
		t.Errorf("a new bucket charged the counter's past: throttled %v", time.Duration(d))
	}
}

// The registry: a principal's buckets under its tenant, shared by its
// connections, forgotten once released and paid, kept while they owe (a
// reconnection does not wipe a debt).
func TestRegistryKeepsDebtForgetsPaid(t *testing.T) {
	r := NewRegistry(nil, nil)
	l := &Limits{Window: time.Second, MaxThrottle: 10 * time.Second}
	l.Client[ProduceBytes] = 1000
	a := r.Acquire("acme", "plain:app", t0)
	b := r.Acquire("acme", "plain:app", t0)
	if a != b {
		t.Fatal("two connections of one principal have two buckets")
	}
	other := r.Acquire("acme", "plain:other", t0)
	if other.Tenant != a.Tenant {
		t.Fatal("one tenant, two tenant buckets")
	}
	if d, s := a.Spend(ProduceBytes, 3000, t0, l); d != 2*time.Second || s != ScopeClient {
		t.Fatalf("throttle %v scope %d", d, s)
	}
	r.Release(a, t0)
	r.Release(b, t0)
	if c := r.Acquire("acme", "plain:app", t0.Add(time.Second)); c != a {
		t.Fatal("a principal in debt was forgotten at its last close")
	} else {
		r.Release(c, t0.Add(time.Second))
	}
	r.Release(other, t0.Add(time.Second))
	r.Acquire("globex", "plain:x", t0.Add(5*time.Second)) // a sweep, later
	if tenants, principals := r.Len(); tenants != 1 || principals != 1 {
		t.Errorf("held %d tenants, %d principals after all paid: want globex's alone", tenants, principals)
	}
}

// The tenant's bucket throttles all its principals together; the larger
// throttle is reported with its scope, capped at max_throttle.
func TestPrincipalTenantScopeAndCap(t *testing.T) {
	r := NewRegistry(nil, nil)
	l := &Limits{Window: time.Second, MaxThrottle: 3 * time.Second}
	l.Tenant[Requests] = 10
	a := r.Acquire("acme", "plain:a", t0)
	b := r.Acquire("acme", "plain:b", t0)
	for i := 0; i < 10; i++ {
		a.Spend(Requests, 1, t0, l)
	}
	if d, s := b.Spend(Requests, 1, t0, l); d != 100*time.Millisecond || s != ScopeTenant {
		t.Errorf("b after a spent the tenant's bucket: %v scope %d", d, s)
	}
	if d, _ := b.Spend(Requests, 100, t0, l); d != 3*time.Second {
		t.Errorf("uncapped: %v", d)
	}
}

// The request path allocates nothing.
func TestSpendAllocs(t *testing.T) {
	r := NewRegistry(&fakeCounter{}, nil)
	l := &Limits{Window: time.Second, MaxThrottle: time.Second}
	l.Client = [NumKinds]int64{1 << 30, 1 << 30, 1 << 20}
	l.Tenant = l.Client
	p := r.Acquire("acme", "plain:a", t0)
	now := time.Now()
	if n := testing.AllocsPerRun(1000, func() {
		p.Spend(Requests, 1, now, l)
		p.Spend(ProduceBytes, 16<<10, now, l)
		p.Debt(FetchBytes, now, l)
	}); n != 0 {
		t.Errorf("%v allocations per request", n)
	}
}

func BenchmarkSpendShared(b *testing.B) {
	r := NewRegistry(nil, nil)
	l := &Limits{Window: time.Second, MaxThrottle: time.Second}
	l.Client = [NumKinds]int64{1 << 40, 1 << 40, 1 << 40}
	l.Tenant = l.Client
	p := r.Acquire("acme", "plain:a", t0)
	b.RunParallel(func(pb *testing.PB) {
		now := time.Now()
		for pb.Next() {
			p.Spend(Requests, 1, now, l)
			p.Spend(ProduceBytes, 16<<10, now, l)
		}
	})
}

// The local store counts per UTC window: a new day starts at zero.
func TestLocalStoreWindows(t *testing.T) {
	s := NewLocal()
	day := s.Counter("plans:acme", Day)
	if s.Counter("plans:acme", Day) != day {
		t.Fatal("the same name gives another counter")
	}
	noon := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	day.Add(noon, 3)
	day.Add(noon.Add(time.Hour), 2)
	if got := day.Total(noon.Add(2 * time.Hour)); got != 5 {
		t.Errorf("day total %d, want 5", got)
	}
	next := noon.Add(12 * time.Hour)
	if got := day.Total(next); got != 0 {
		t.Errorf("next day starts at %d", got)
	}
	day.Add(next, 1)
	if got := day.Total(next); got != 1 {
		t.Errorf("next day total %d, want 1", got)
	}
	run := s.Counter("kafka:rate:acme", Running)
	run.Add(noon, 3)
	run.Add(next, 4)
	if got := run.Total(next.Add(48 * time.Hour)); got != 7 {
		t.Errorf("running total %d, want 7 (it never starts again)", got)
	}
	month := s.Counter("plans:acme", Month)
	month.Add(noon, 7)
	if month.Total(next) != 7 || month.Total(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) != 0 {
		t.Error("month window")
	}
}

// Issue 22.2: what a Fetch may ask is what the buckets hold, shared among
// the principal's (and its tenant's) fetching connections; what they hold,
// undivided, is what decides whether a Fetch goes at all (engine), so any
// number of fetching connections is served.
func TestAllowanceSharedByFetchers(t *testing.T) {
	r := NewRegistry(nil, nil)
	now := time.Now()
	l := Limits{Window: time.Second}
	l.Client[FetchBytes] = 2 << 20
	l.Tenant[FetchBytes] = 5 << 19 // 2.5 MiB
	p := r.Acquire("acme", "plain:acme-app", now)
	if got := p.Allowance(FetchBytes, now, &l); got != 2<<20 {
		t.Fatalf("allowance of a full bucket, no fetcher yet: %d, want 2 MiB", got)
	}
	for i := 0; i < 40; i++ {
		p.Fetcher(1)
	}
	if got := p.Allowance(FetchBytes, now, &l); got != 2<<20/40 {
		t.Fatalf("allowance with 40 fetchers: %d, want 2 MiB / 40", got)
	}
	if got := p.Left(FetchBytes, now, &l); got != 2<<20 {
		t.Fatalf("left: %d, want the bucket's 2 MiB undivided", got)
	}
	p.Spend(FetchBytes, 1<<20, now, &l)
	if got := p.Left(FetchBytes, now, &l); got != 1<<20 {
		t.Fatalf("left after 1 MiB: %d, want 1 MiB", got)
	}
	for i := 0; i < 40; i++ {
		p.Fetcher(-1)
	}
	q := r.Acquire("acme", "plain:acme-orders-reader", now)
	q.Fetcher(1)
	if got := q.Allowance(FetchBytes, now, &l); got != 3<<19 {
		t.Fatalf("another principal of the tenant: %d, want the tenant's 1.5 MiB left", got)
	}
	var none Limits
	if got := q.Allowance(FetchBytes, now, &none); got != -1 {
		t.Fatalf("no consumer_byte_rate: %d, want -1", got)
	}
}
