package relay

import (
	"testing"

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
	if g := b.Grant(0, 5000); g != 5000 {
		t.Fatalf("idle connection must be granted one answer alone, got %d", g)
	}
	b.Reserve(600)
	if g := b.Grant(0, 5000); g != 400 {
		t.Fatalf("grant = %d, want 400", g)
	}
	if g := b.Grant(400, 5000); g != 0 {
		t.Fatalf("at the bound grant = %d, want 0", g)
	}
	b.Release(600)
	if g := b.Grant(999, 5000); g != 1 {
		t.Fatalf("grant = %d, want 1", g)
	}
	ten := &Shared{Limit: 100}
	b2 := Budget{Limit: 1000, Tenant: ten}
	b2.Reserve(50)
	if g := b2.Grant(0, 5000); g != 50 {
		t.Fatalf("tenant share: grant = %d, want 50", g)
	}
	b2.Release(50)
	if ten.Used() != 0 {
		t.Fatal("tenant bytes not given back")
	}
}

// B2: the tenant's share counts its connections' unread bytes too, and
// says which budget limits.
func TestBudgetTenantShareCountsUnread(t *testing.T) {
	ten, rep := &Shared{Limit: 1000}, &Shared{Limit: 10000}
	a := Budget{Limit: 800, Tenant: ten, Replica: rep}
	b := Budget{Limit: 800, Tenant: ten, Replica: rep}
	a.SyncOutbound(700) // a's client reads nothing
	if g, by := b.GrantBy(0, 5000); g != 5000 || by != LevelNone {
		t.Fatalf("an idle connection: %d %v", g, by)
	}
	b.Reserve(200)
	if g, by := b.GrantBy(0, 5000); g != 100 || by != LevelTenant {
		t.Fatalf("grant %d by %v, want 100 by the tenant", g, by)
	}
	b.Reserve(100)
	if g, by := b.GrantBy(0, 5000); g != 0 || by != LevelTenant {
		t.Fatalf("at the tenant's bound: %d by %v", g, by)
	}
	a.SyncOutbound(0)
	b.Release(300)
	if ten.Used() != 0 || rep.Used() != 0 {
		t.Fatalf("shares not given back: %d %d", ten.Used(), rep.Used())
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
