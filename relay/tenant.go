package relay

import (
	"sync"
	"time"
)

// Tenant is one tenant of the listener while it has connections: its
// in-flight share (B2), its count of connections and its new connections
// in the current second (B1). The quotas and the per-tenant metrics hang
// on it. A connection takes it at authentication (Tenants.Take) and gives
// it back at its close (Tenants.Release); a re-authentication takes
// nothing (KIP-368).
type Tenant struct {
	Name  string
	Share Shared // max_tenant_in_flight_bytes; atomics, read by every loop

	// Guarded by the registry's lock.
	conns  int
	second int64 // the rate's window: a Unix second
	opened int   // connections opened in that second
	idle   bool  // in the registry's idle list
}

// Bound names the tenant bound that refuses a connection.
type Bound uint8

const (
	BoundNone Bound = iota
	BoundConnections
	BoundRate
)

// String is the bound's configuration key (the metric's label).
func (b Bound) String() string {
	switch b {
	case BoundConnections:
		return "max_connections_per_tenant"
	case BoundRate:
		return "max_connection_rate_per_tenant"
	}
	return ""
}

// Tenants is the registry of the tenants that have connections, shared by
// every loop. A tenant is dropped when its last connection closes, unless
// its rate window is still the current second (a tenant that reconnects at
// once must not start a new window); such a one is dropped at the first
// take or release of a later second. The registry holds the tenants
// connected plus, at most, those that closed within the last second.
type Tenants struct {
	mu         sync.Mutex
	shareLimit int64
	byName     map[string]*Tenant
	idle       []*Tenant // no connection, rate window current when released
	lastPurge  int64
}

// NewTenants returns an empty registry; shareLimit is each tenant's
// in-flight share (max_tenant_in_flight_bytes, start-only).
func NewTenants(shareLimit int64) *Tenants {
	return &Tenants{shareLimit: shareLimit, byName: map[string]*Tenant{}}
}

// Take counts a newly authenticated connection of the tenant name: its
// Tenant, or the bound that refuses it (maxConns connections at once,
// maxRate new connections in one second; 0 is off). A refusal by the
// connection bound takes no rate token.
func (r *Tenants) Take(name string, maxConns, maxRate int, now time.Time) (*Tenant, Bound) {
	sec := now.Unix()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.purge(sec)
	t := r.byName[name]
	if t == nil {
		t = &Tenant{Name: name}
		t.Share.Limit = r.shareLimit
		r.byName[name] = t
	}
	if maxConns > 0 && t.conns >= maxConns {
		return nil, BoundConnections
	}
	if maxRate > 0 {
		if t.second != sec {
			t.second, t.opened = sec, 0
		}
		if t.opened >= maxRate {
			r.dropIfIdle(t, sec)
			return nil, BoundRate
		}
		t.opened++
	}
	t.conns++
	return t, BoundNone
}

// Release gives back a connection of t (taken by Take). The connection
// gives back its bytes before (Budget.Release, SyncOutbound(0)).
func (r *Tenants) Release(t *Tenant, now time.Time) {
	sec := now.Unix()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.purge(sec)
	t.conns--
	r.dropIfIdle(t, sec)
}

// Get returns the tenant name if it is registered, else nil.
func (r *Tenants) Get(name string) *Tenant {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byName[name]
}

// dropIfIdle drops a tenant without connections, or keeps it until its
// rate window is past.
func (r *Tenants) dropIfIdle(t *Tenant, sec int64) {
	if t.conns > 0 {
		return
	}
	if t.opened > 0 && t.second >= sec {
		if !t.idle {
			t.idle = true
			r.idle = append(r.idle, t)
		}
		return
	}
	if r.byName[t.Name] == t {
		delete(r.byName, t.Name)
	}
}

// purge drops, once a second, the idle tenants whose window is past.
func (r *Tenants) purge(sec int64) {
	if sec == r.lastPurge || len(r.idle) == 0 {
		r.lastPurge = sec
		return
	}
	r.lastPurge = sec
	keep := r.idle[:0]
	for _, t := range r.idle {
		switch {
		case t.conns > 0:
			t.idle = false // back in use: its next release judges again
		case t.second >= sec:
			keep = append(keep, t)
		default:
			t.idle = false
			delete(r.byName, t.Name)
		}
	}
	clear(r.idle[len(keep):])
	r.idle = keep
}
