package relay

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/decide"
)

func TestQueueOrderAndReuse(t *testing.T) {
	var q Queue
	for i := 0; i < 20; i++ {
		p := q.Get()
		p.ClientCorr = int32(i)
		q.Push(p)
	}
	for i := 0; i < 20; i++ {
		if p := q.Pop(); p.ClientCorr != int32(i) {
			t.Fatalf("answer %d out of order: %d", i, p.ClientCorr)
		} else {
			q.Put(p)
		}
	}
	if q.Len() != 0 || q.Front() != nil {
		t.Fatal("queue not empty")
	}
	n := testing.AllocsPerRun(100, func() { p := q.Get(); q.Push(p); q.Put(q.Pop()) })
	if n != 0 {
		t.Fatalf("queue allocates %v", n)
	}
	_ = decide.Pending{}
}

// B2: past the bound nothing more is granted; an idle connection is always granted (one answer crosses alone).
func TestBudgetAtTheBound(t *testing.T) {
	b := Budget{Limit: 1000}
	if v := b.Admit(Ask{Want: 5000}); v.Kind != Go || v.Grant != 5000 {
		t.Fatalf("idle connection must be granted one answer alone, got %+v", v)
	}
	b.Reserve(600)
	if v := b.Admit(Ask{Want: 5000}); v.Kind != Go || v.Grant != 400 {
		t.Fatalf("verdict %+v, want 400 granted", v)
	}
	if v := b.Admit(Ask{Outbound: 400, Want: 5000}); v.Kind != WaitBytes || v.By != LevelConn {
		t.Fatalf("at the bound: %+v, want a wait for the connection's budget", v)
	}
	b.Release(600)
	if v := b.Admit(Ask{Outbound: 999, Want: 5000}); v.Kind != Go || v.Grant != 1 {
		t.Fatalf("verdict %+v, want 1 granted", v)
	}
	ten := &Shared{Limit: 100}
	b2 := Budget{Limit: 1000, Tenant: ten}
	b2.Reserve(50)
	if v := b2.Admit(Ask{Want: 5000}); v.Kind != Go || v.Grant != 50 {
		t.Fatalf("tenant share: %+v, want 50 granted", v)
	}
	b2.Release(50)
	if ten.Used() != 0 {
		t.Fatal("tenant bytes not given back")
	}
}

// B2: a Fetch waits rather than ask for crumbs, unless crumbs are all it wants.
func TestAdmitMin(t *testing.T) {
	b := Budget{Limit: 1000}
	b.Reserve(900)
	if v := b.Admit(Ask{Want: 5000, Min: 200}); v.Kind != WaitBytes || v.By != LevelConn {
		t.Fatalf("100 granted below a minimum of 200: %+v, want a wait", v)
	}
	if v := b.Admit(Ask{Want: 80, Min: 200}); v.Kind != Go || v.Grant != 80 {
		t.Fatalf("a request that wants less than the minimum: %+v", v)
	}
	if v := b.Admit(Ask{Want: 5000}); v.Kind != Go || v.Grant != 100 {
		t.Fatalf("no minimum: %+v", v)
	}
}

// B2: the tenant's share counts its connections' unread bytes too, and
// says which budget limits; on_tenant_budget_exceeded: close closes only
// for the tenant's share.
func TestBudgetTenantShareCountsUnread(t *testing.T) {
	ten, rep := &Shared{Limit: 1000}, &Shared{Limit: 10000}
	a := Budget{Limit: 800, Tenant: ten, Replica: rep}
	b := Budget{Limit: 800, Tenant: ten, Replica: rep}
	a.SyncOutbound(700) // a's client reads nothing
	if v := b.Admit(Ask{Want: 5000, CloseOnTenant: true}); v.Kind != Go || v.Grant != 5000 {
		t.Fatalf("an idle connection: %+v", v)
	}
	b.Reserve(200)
	if v := b.Admit(Ask{Want: 5000}); v.Kind != Go || v.Grant != 100 {
		t.Fatalf("verdict %+v, want 100 granted", v)
	}
	b.Reserve(100)
	if v := b.Admit(Ask{Want: 5000}); v.Kind != WaitBytes || v.By != LevelTenant {
		t.Fatalf("at the tenant's bound: %+v", v)
	}
	if v := b.Admit(Ask{Want: 5000, CloseOnTenant: true}); v.Kind != Close || v.Cause != CauseTenantShare {
		t.Fatalf("at the tenant's bound in close mode: %+v", v)
	}
	if v := a.Admit(Ask{Outbound: 700, Want: 5000, CloseOnTenant: true}); v.Kind != Close {
		t.Fatalf("the other connection of the tenant in close mode: %+v", v)
	}
	a.SyncOutbound(0)
	b.Release(300)
	d := Budget{Limit: 100, Tenant: ten}
	d.Reserve(100)
	if v := d.Admit(Ask{Want: 5000, CloseOnTenant: true}); v.Kind != WaitBytes || v.By != LevelConn {
		t.Fatalf("the connection's own bound never closes: %+v", v)
	}
	d.Release(100)
	if ten.Used() != 0 || rep.Used() != 0 {
		t.Fatalf("shares not given back: %d %d", ten.Used(), rep.Used())
	}
}

// The verdicts are ordered: of two on one request, the stricter wins.
func TestVerdictOrder(t *testing.T) {
	now := time.Unix(1000, 0)
	g100, g50 := Verdict{Kind: Go, Grant: 100}, Verdict{Kind: Go, Grant: 50}
	wb := Verdict{Kind: WaitBytes, By: LevelTenant}
	w1, w2 := Verdict{Kind: WaitUntil, Until: now.Add(time.Second)}, Verdict{Kind: WaitUntil, Until: now.Add(2 * time.Second)}
	cl := Verdict{Kind: Close, Cause: CauseTenantShare}
	for _, c := range []struct{ a, b, want Verdict }{
		{g100, g50, g50},
		{g50, g100, g50},
		{g100, wb, wb},
		{wb, w1, w1},
		{w1, wb, w1},
		{w1, w2, w2},
		{w2, w1, w2},
		{w2, cl, cl},
		{cl, g100, cl},
	} {
		if got := Join(c.a, c.b); got != c.want {
			t.Errorf("Join(%+v, %+v) = %+v, want %+v", c.a, c.b, got, c.want)
		}
	}
	if !(Go < WaitBytes && WaitBytes < WaitUntil && WaitUntil < Close) {
		t.Fatal("kinds out of order")
	}
}

// Answers go back in request order (invariant 4): a broker answer matches
// the oldest forwarded request, or says why not.
func TestQueueMatch(t *testing.T) {
	var q Queue
	if _, bad := q.Match(1); bad != MismatchUnknown {
		t.Fatalf("an answer to nothing: %v", bad)
	}
	for _, c := range []int32{7, 8, 9} {
		p := q.Get()
		p.UpCorr = c
		q.Push(p)
	}
	if p, bad := q.Match(7); bad != Matched || p != q.Front() {
		t.Fatalf("the head's answer: %v", bad)
	}
	if p, bad := q.Match(9); bad != MismatchLater || p != nil || bad.String() != "the answer to a later request" {
		t.Fatalf("an answer to a later request: %v", bad)
	}
	if _, bad := q.Match(42); bad != MismatchUnknown || bad.String() != "unknown correlation id" {
		t.Fatalf("an unknown correlation id: %v", bad)
	}
	q.Put(q.Pop())
	if _, bad := q.Match(8); bad != Matched {
		t.Fatalf("the next answer once the head is out: %v", bad)
	}
	// A local answer at the head is owed before any broker answer.
	var l Queue
	lp := l.Get()
	lp.Local = append(lp.Local, 1)
	l.Push(lp)
	fp := l.Get()
	fp.UpCorr = 3
	l.Push(fp)
	if _, bad := l.Match(3); bad != MismatchLater {
		t.Fatalf("a broker answer before the local one owed first: %v", bad)
	}
	if n := testing.AllocsPerRun(100, func() { q.Match(8); q.Match(42) }); n != 0 {
		t.Fatalf("Match allocates %v", n)
	}
}

// B1: a tenant's connections and new connections a second are bounded;
// the bytes of its connections count in one share.
func TestTenantBounds(t *testing.T) {
	r := NewTenants(1000)
	now := time.Unix(5000, 0)
	a, b := mustTake(t, r, "acme", 2, 0, now), mustTake(t, r, "acme", 2, 0, now)
	if a != b || a.Share.Limit != 1000 {
		t.Fatal("two connections of a tenant do not share one tenant")
	}
	if _, bound := r.Take("acme", 2, 0, now); bound != BoundConnections || bound.String() != "max_connections_per_tenant" {
		t.Fatalf("a third connection past max_connections_per_tenant 2: %v", bound)
	}
	if g := mustTake(t, r, "globex", 2, 0, now); g == a {
		t.Fatal("two tenants share a tenant")
	}
	r.Release(a, now)
	mustTake(t, r, "acme", 2, 0, now)

	// The rate: 2 a second, kept across a close and a reconnection within the second.
	x := mustTake(t, r, "initech", 0, 2, now)
	r.Release(x, now)
	y := mustTake(t, r, "initech", 0, 2, now)
	r.Release(y, now)
	if _, bound := r.Take("initech", 0, 2, now); bound != BoundRate || bound.String() != "max_connection_rate_per_tenant" {
		t.Fatalf("a third connection in one second past max_connection_rate_per_tenant 2: %v", bound)
	}
	mustTake(t, r, "initech", 0, 2, now.Add(time.Second))
}

func mustTake(t *testing.T, r *Tenants, name string, maxConns, maxRate int, now time.Time) *Tenant {
	t.Helper()
	ten, bound := r.Take(name, maxConns, maxRate, now)
	if bound != BoundNone || ten == nil || ten.Name != name {
		t.Fatalf("%s refused by %v", name, bound)
	}
	return ten
}

// Tenants that come and go do not grow the registry: a tenant without a
// connection is dropped, at once or once its rate window is past.
func TestTenantsNoGrowth(t *testing.T) {
	r := NewTenants(1000)
	now := time.Unix(7000, 0)
	kept := mustTake(t, r, "kept", 0, 100, now)
	for i := 0; i < 10000; i++ {
		now = now.Add(time.Millisecond)
		name := "t" + strconv.Itoa(i)
		rate := 0
		if i%2 == 0 {
			rate = 100 // with a rate window, kept until the second is past
		}
		a := mustTake(t, r, name, 0, rate, now)
		b := mustTake(t, r, name, 0, rate, now)
		a.Share.used.Add(10)
		a.Share.used.Add(-10)
		r.Release(a, now)
		r.Release(b, now)
		if n := len(r.byName); n > 1+1000 { // "kept" plus at most a second of arrivals
			t.Fatalf("after %d tenants came and went the registry holds %d", i+1, n)
		}
		if len(r.idle) > 1000 {
			t.Fatalf("after %d tenants the idle list holds %d", i+1, len(r.idle))
		}
	}
	now = now.Add(time.Second)
	r.Release(mustTake(t, r, "last", 0, 0, now), now)
	if len(r.byName) != 1 || r.Get("kept") != kept || len(r.idle) != 0 {
		t.Fatalf("a second later the registry holds %d tenants, %d idle", len(r.byName), len(r.idle))
	}
	r.Release(kept, now)
	if len(r.byName) != 0 || r.Get("kept") != nil {
		t.Fatalf("the last tenant not dropped: %d", len(r.byName))
	}
}

// B2 (issue 33.1): bytes read and not handled count in the shares and
// fit at each bound exactly; below the floor they always fit; a request
// never passes alone (an idle connection too).
func TestInboundFitsAtTheBounds(t *testing.T) {
	tenant, replica, reqs := &Shared{Limit: 100}, &Shared{Limit: 1000}, &Shared{}
	b := Budget{Limit: 50, Tenant: tenant, Replica: replica, Requests: reqs}
	const floor = 5
	for _, c := range []struct {
		in   int64
		fits bool
	}{{5, true}, {50, true}, {51, false}} {
		if got := b.Fits(c.in, floor); got != c.fits {
			t.Errorf("idle connection, %d bytes read: fits %v, want %v", c.in, got, c.fits)
		}
	}
	b.SyncInbound(0)
	b.Reserve(20)
	if b.Fits(31, floor) {
		t.Errorf("beside 20 reserved, 31 read fits")
	}
	if tenant.Used() != 20 || reqs.Used() != 0 {
		t.Errorf("a request that does not fit is counted: tenant %d, requests %d", tenant.Used(), reqs.Used())
	}
	if !b.Fits(30, floor) {
		t.Errorf("beside 20 reserved, 30 read does not fit")
	}
	if tenant.Used() != 50 || replica.Used() != 50 || reqs.Used() != 30 {
		t.Errorf("counted: tenant %d, replica %d, requests %d", tenant.Used(), replica.Used(), reqs.Used())
	}
	if !b.Fits(30, floor) || !b.Fits(10, floor) {
		t.Error("what is already counted, or less, always fits")
	}
	if reqs.Used() != 10 {
		t.Errorf("less read counted: requests %d, want 10", reqs.Used())
	}
	tenant.used.Add(70) // another connection of the tenant: 100, its share
	if b.Fits(11, floor) {
		t.Error("a byte past the tenant's share fits")
	}
	if !b.Fits(floor, floor) {
		t.Error("the floor does not fit")
	}
	tenant.used.Add(-70)
	replica.used.Add(975) // the replica at its bound: 20 reserved, 5 read
	if b.Fits(6, floor) {
		t.Error("a byte past the replica's budget fits")
	}
	if tenant.Used() != 25 || replica.Used() != 1000 || reqs.Used() != 5 {
		t.Errorf("a request the replica refused is counted: tenant %d, replica %d, requests %d", tenant.Used(), replica.Used(), reqs.Used())
	}
	replica.used.Add(-975)
	b.Release(20)
	b.SyncInbound(0)
	if tenant.Used() != 0 || replica.Used() != 0 || reqs.Used() != 0 {
		t.Errorf("given back: tenant %d, replica %d, requests %d", tenant.Used(), replica.Used(), reqs.Used())
	}
	// Joining a tenant at authentication counts what was read before.
	pre := Budget{Limit: 10, Replica: replica}
	pre.SyncInbound(7)
	t2 := &Shared{Limit: 100}
	pre.Share(t2)
	if t2.Used() != 7 || replica.Used() != 7 {
		t.Errorf("after Share: tenant %d, replica %d, want 7 and 7", t2.Used(), replica.Used())
	}
}

// B2 (issue 33.1): connections on several loops asking at once never
// pass a share together: Fits takes the room it grants, so no two of them
// can each see the room the other is taking.
func TestInboundFitsAtOnceNeverPassesTheShare(t *testing.T) {
	const conns, frame, rounds = 8, 7, 2000
	for r := 0; r < rounds; r++ {
		tenant, replica := &Shared{Limit: 4 * frame}, &Shared{Limit: 1 << 40}
		var start, done sync.WaitGroup
		start.Add(1)
		var granted atomic.Int64
		for i := 0; i < conns; i++ {
			done.Add(1)
			go func() {
				defer done.Done()
				b := Budget{Limit: 2 * frame, Tenant: tenant, Replica: replica}
				start.Wait()
				if b.Fits(frame, 1) {
					granted.Add(1)
				}
			}()
		}
		start.Done()
		done.Wait()
		if g, u := granted.Load(), tenant.Used(); g != 4 || u != 4*frame {
			t.Fatalf("round %d: %d frames granted, the tenant holds %d of %d", r, g, u, tenant.Limit)
		}
	}
}
