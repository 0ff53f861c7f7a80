package relay

import "sync/atomic"

// Budget is the in-flight bytes of one connection: the answers reserved at
// the broker (requests forwarded, not yet answered) plus what the client
// has not read yet (its outbound buffer). Past the bound the connection's
// next request waits — the broker is never asked for more than the bound
// allows — except that one answer always crosses alone (B2).
//
// The per-connection count lives on the loop (no atomics); the tenant and
// replica counters (shared by every loop) are atomics, taken together with
// it by Reserve and given back by Release.
type Budget struct {
	Limit    int64 // max_in_flight_bytes
	Reserved int64
	Tenant   *Shared // may be nil
	Replica  *Shared // may be nil
}

// Shared is a budget shared by many connections (a tenant, the replica).
type Shared struct {
	Limit int64
	used  atomic.Int64
}

// Used returns the bytes held.
func (s *Shared) Used() int64 { return s.used.Load() }

// Grant returns how many bytes a request may ask of the broker now, given
// the client's unread bytes (outbound), capped at want; 0 means wait. An
// idle connection is always granted want: one answer always crosses alone.
func (b *Budget) Grant(outbound, want int64) int64 {
	held := b.Reserved + outbound
	if held == 0 {
		return want
	}
	avail := b.Limit - held
	for _, s := range []*Shared{b.Tenant, b.Replica} {
		if s != nil {
			avail = min(avail, s.Limit-s.used.Load())
		}
	}
	if avail <= 0 {
		return 0
	}
	return min(avail, want)
}

// Reserve takes n bytes for a forwarded request.
func (b *Budget) Reserve(n int64) {
	b.Reserved += n
	if b.Tenant != nil {
		b.Tenant.used.Add(n)
	}
	if b.Replica != nil {
		b.Replica.used.Add(n)
	}
}

// Release gives back n bytes reserved.
func (b *Budget) Release(n int64) {
	b.Reserved -= n
	if b.Tenant != nil {
		b.Tenant.used.Add(-n)
	}
	if b.Replica != nil {
		b.Replica.used.Add(-n)
	}
}
