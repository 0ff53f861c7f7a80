package quota

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Scope says which bucket throttled: the principal's or its tenant's.
type Scope uint8

const (
	ScopeNone Scope = iota
	ScopeClient
	ScopeTenant
)

// Limits are the rates in force (listeners.kafka.quotas), by Kind, for one
// principal (Client) and for a whole tenant (Tenant); 0 is no bound. Window
// is a bucket's depth in time, MaxThrottle the cap of a throttle. A plain
// value: the engine makes it once per snapshot.
type Limits struct {
	Client, Tenant [NumKinds]int64
	Window         time.Duration
	MaxThrottle    time.Duration
}

// Any reports whether some rate is bounded.
func (l *Limits) Any() bool {
	for k := range NumKinds {
		if l.Client[k] > 0 || l.Tenant[k] > 0 {
			return true
		}
	}
	return false
}

// Tenant is one tenant's buckets, shared by its principals (on every loop).
type Tenant struct {
	Name    string
	Buckets [NumKinds]Bucket
	// Data is the caller's, set once when the tenant is made (the engine's
	// per-tenant series): found with the tenant, never by name.
	Data any

	refs       int          // connections held, of all its principals (Registry.mu)
	fetchers   atomic.Int32 // connections of its principals that fetch (Allowance)
	principals map[string]*Principal
}

// Principal is one verified principal's buckets (the key id, the token's
// subject, the certificate's id; never a client.id), under its tenant.
type Principal struct {
	Tenant  *Tenant
	Buckets [NumKinds]Bucket

	key      string
	refs     int          // connections (Registry.mu)
	fetchers atomic.Int32 // its connections that fetch (Allowance)

	// read: its buckets and its tenant's have been read from the shared
	// store once (or the wait for it ran out), since made at its first
	// Acquire (Unix ns) on this replica (firstRead).
	read  atomic.Bool
	since int64
	reg   *Registry
}

// Spend charges n of kind to the principal's bucket and its tenant's at
// the rates of l, and returns the throttle (capped at l.MaxThrottle, 0:
// none) and the scope that set it. Lock-free, no allocation.
func (p *Principal) Spend(k Kind, n int64, now time.Time, l *Limits) (time.Duration, Scope) {
	w := int64(l.Window)
	c := p.Buckets[k].Spend(now, n, l.Client[k], w)
	t := p.Tenant.Buckets[k].Spend(now, n, l.Tenant[k], w)
	return throttle(c, t, l)
}

// Debt is how long the principal or its tenant is past its depth for kind
// (capped, 0: neither), and which.
func (p *Principal) Debt(k Kind, now time.Time, l *Limits) (time.Duration, Scope) {
	w := int64(l.Window)
	c := p.Buckets[k].Debt(now, l.Client[k], w)
	t := p.Tenant.Buckets[k].Debt(now, l.Tenant[k], w)
	return throttle(c, t, l)
}

// Owed is how long the principal's next request of kind must wait for its
// bucket and its tenant's to be within their depth again (0: it may go
// now). Unlike Debt it is not capped at max_throttle: the cap bounds the
// throttle announced in an answer, Owed the wait before the next request
// is served, on any connection of the principal (DESIGN.md, invariant 33).
//
// A principal whose buckets a shared store has not read yet on this
// replica owes the wait for that read (firstRead): its debt on another
// replica is owed here from its first request.
func (p *Principal) Owed(k Kind, now time.Time, l *Limits) time.Duration {
	if !p.read.Load() {
		if d := p.firstRead(now, l); d > 0 {
			return d
		}
	}
	w := int64(l.Window)
	return time.Duration(max(p.Buckets[k].Debt(now, l.Client[k], w), p.Tenant.Buckets[k].Debt(now, l.Tenant[k], w), 0))
}

// Left is what the principal's bucket and its tenant's of kind both still
// hold (the smaller), undivided; -1: neither is bounded.
func (p *Principal) Left(k Kind, now time.Time, l *Limits) int64 {
	w := int64(l.Window)
	a := int64(-1)
	for _, b := range [2]struct {
		b    *Bucket
		rate int64
	}{{&p.Buckets[k], l.Client[k]}, {&p.Tenant.Buckets[k], l.Tenant[k]}} {
		if b.rate <= 0 {
			continue
		}
		if left := b.b.Left(now, b.rate, w); a < 0 || left < a {
			a = left
		}
	}
	return a
}

// Fetcher counts a connection of the principal that fetches (+1 at its
// first Fetch, -1 at its close): what Allowance shares the buckets among.
func (p *Principal) Fetcher(delta int32) {
	p.fetchers.Add(delta)
	p.Tenant.fetchers.Add(delta)
}

// Allowance is what the principal may receive of kind at once: the bytes
// left in its bucket and its tenant's, each shared among the connections
// that fetch from it (the principal's, the tenant's: Fetcher), so that
// answers asked on several connections together stay within the depth.
// -1: no bound.
func (p *Principal) Allowance(k Kind, now time.Time, l *Limits) int64 {
	w := int64(l.Window)
	a := int64(-1)
	share := func(b *Bucket, rate int64, refs int32) {
		if rate <= 0 {
			return
		}
		left := b.Left(now, rate, w) / int64(max(refs, 1))
		if a < 0 || left < a {
			a = left
		}
	}
	share(&p.Buckets[k], l.Client[k], p.fetchers.Load())
	share(&p.Tenant.Buckets[k], l.Tenant[k], p.Tenant.fetchers.Load())
	return a
}

func throttle(c, t int64, l *Limits) (time.Duration, Scope) {
	d, s := c, ScopeClient
	if t > c {
		d, s = t, ScopeTenant
	}
	if d <= 0 {
		return 0, ScopeNone
	}
	return min(time.Duration(d), l.MaxThrottle), s
}

// Registry holds the buckets of the principals with connections, and of
// those that still owe (a principal that reconnects keeps its debt). Its
// lock is taken when a connection takes or gives back its principal, never
// per request.
type Registry struct {
	store   Store
	newData func(tenant string) any

	mu        sync.Mutex
	tenants   map[string]*Tenant
	lastSweep time.Time

	// Log says a first read that did not land in time (firstRead), a
	// line a minute at most (lateLog: Unix ns of the last); nil: slog's
	// default.
	Log     *slog.Logger
	lateLog atomic.Int64
}

// NewRegistry returns an empty registry. store (nil: none) shares the
// tenants' and the principals' rate buckets between replicas
// (Store.Counter over Running);
// newData (nil: none) makes a tenant's Data when it is first seen.
func NewRegistry(store Store, newData func(tenant string) any) *Registry {
	return &Registry{store: store, newData: newData, tenants: map[string]*Tenant{}}
}

// CounterName is the shared counter's name of a tenant's rate bucket.
func CounterName(tenant string, k Kind) string {
	return "kafka:rate:" + tenant + ":" + KindNames[k]
}

// PrincipalCounterName is the shared counter's name of a principal's rate
// bucket (issue 22.3): under its tenant's, so that no two tenants' names
// meet ("kafka:rate:acme:plain:acme-app:producer_byte_rate").
func PrincipalCounterName(tenant, principal string, k Kind) string {
	return "kafka:rate:" + tenant + ":" + principal + ":" + KindNames[k]
}

// Acquire returns the principal's buckets (made at its first connection),
// held until Release.
func (r *Registry) Acquire(tenant, principal string, now time.Time) *Principal {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweep(now)
	t := r.tenants[tenant]
	if t == nil {
		t = &Tenant{Name: tenant, principals: map[string]*Principal{}}
		if r.store != nil {
			for k := range NumKinds {
				t.Buckets[k].SetCounter(r.store.Counter(CounterName(tenant, k), Running))
			}
		}
		if r.newData != nil {
			t.Data = r.newData(tenant)
		}
		r.tenants[tenant] = t
	}
	p := t.principals[principal]
	if p == nil {
		p = &Principal{Tenant: t, key: principal, since: now.UnixNano(), reg: r}
		p.read.Store(r.store == nil)
		if r.store != nil {
			// The principal's rate is one over every replica, as its
			// tenant's is: a key used on two gateways has one bucket.
			for k := range NumKinds {
				p.Buckets[k].SetCounter(r.store.Counter(PrincipalCounterName(tenant, principal, k), Running))
			}
		}
		t.principals[principal] = p
	}
	p.refs++
	t.refs++
	return p
}

// Release gives back a principal Acquire returned. A principal (and a
// tenant) with no connection left is forgotten once it owes nothing.
func (r *Registry) Release(p *Principal, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p.refs--
	p.Tenant.refs--
	r.forget(p, now)
	r.sweep(now)
}

func (r *Registry) forget(p *Principal, now time.Time) {
	if p.refs > 0 || !paid(&p.Buckets, now) {
		return
	}
	t := p.Tenant
	delete(t.principals, p.key)
	if t.refs == 0 && len(t.principals) == 0 && paid(&t.Buckets, now) {
		delete(r.tenants, t.Name)
	}
}

// sweep forgets, once a second at most, what has no connection and has
// paid its debt since its last release.
func (r *Registry) sweep(now time.Time) {
	if now.Sub(r.lastSweep) < time.Second {
		return
	}
	r.lastSweep = now
	for _, t := range r.tenants {
		for _, p := range t.principals {
			if p.refs == 0 {
				r.forget(p, now)
			}
		}
		if t.refs == 0 && len(t.principals) == 0 && paid(&t.Buckets, now) {
			delete(r.tenants, t.Name)
		}
	}
}

// Len is the number of tenants and principals held (tests).
func (r *Registry) Len() (tenants, principals int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.tenants {
		principals += len(t.principals)
	}
	return len(r.tenants), principals
}

func paid(bs *[NumKinds]Bucket, now time.Time) bool {
	for i := range bs {
		if !bs[i].Paid(now) {
			return false
		}
	}
	return true
}
