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
	Outbound int64   // the client's unread bytes, as last counted in the shares (the engine keeps them under its read pause's high mark)
	Inbound  int64   // what the gateway read from the client and has not handled, as last counted in the shares (SyncInbound)
	Tenant   *Shared // may be nil
	Replica  *Shared // may be nil
	// Requests counts Inbound alone, over every connection (a gauge; its
	// Limit is not a bound); may be nil.
	Requests *Shared
}

// Shared is a budget shared by many connections (a tenant, the replica).
type Shared struct {
	Limit int64
	used  atomic.Int64
}

// Used returns the bytes held.
func (s *Shared) Used() int64 { return s.used.Load() }

// Level names the budget that limits a grant.
type Level uint8

const (
	LevelNone Level = iota
	LevelConn
	LevelTenant
	LevelReplica
)

// grant returns how many bytes a request may ask of the broker now, given
// the client's unread bytes (outbound), capped at want (0 means wait), and
// which budget is the tightest (LevelNone if want fits). An idle
// connection is always granted want: one answer always crosses alone.
func (b *Budget) grant(outbound, want int64) (int64, Level) {
	held := b.Reserved + outbound
	if held == 0 {
		return want, LevelNone
	}
	avail, by := b.Limit-held, LevelConn
	if b.Tenant != nil {
		if a := b.Tenant.Limit - b.Tenant.used.Load(); a < avail {
			avail, by = a, LevelTenant
		}
	}
	if b.Replica != nil {
		if a := b.Replica.Limit - b.Replica.used.Load(); a < avail {
			avail, by = a, LevelReplica
		}
	}
	if avail <= 0 {
		return 0, by
	}
	if avail >= want {
		return want, LevelNone
	}
	return avail, by
}

// SyncOutbound counts the client's unread bytes (its outbound buffer, read
// by the caller) in the tenant and replica shares: the change since the
// last call is added. Call after each write to the client and on a tick
// while bytes are unread; SyncOutbound(0) at the close gives them back.
func (b *Budget) SyncOutbound(out int64) {
	d := out - b.Outbound
	if d == 0 {
		return
	}
	b.Outbound = out
	b.shares(d)
}

// shares adds d to the tenant's and the replica's counts.
func (b *Budget) shares(d int64) {
	if b.Tenant != nil {
		b.Tenant.used.Add(d)
	}
	if b.Replica != nil {
		b.Replica.used.Add(d)
	}
}

// SyncInbound counts what the gateway read from the client and has not
// handled yet (a frame being gathered, requests waiting, TLS records
// decrypted ahead), or a frame's whole size once it may be gathered
// (Fits), in the tenant and replica shares: the change since the last
// call is added. SyncInbound(0) at the close gives them back.
func (b *Budget) SyncInbound(in int64) {
	d := in - b.Inbound
	if d == 0 {
		return
	}
	b.Inbound = in
	if b.Requests != nil {
		b.Requests.used.Add(d)
	}
	b.shares(d)
}

// Fits says whether the connection may hold in bytes read and not handled
// (instead of the Inbound it holds) and, when it may, counts them as
// SyncInbound does: within its own bound, beside the answers it holds,
// and within the tenant's and the replica's shares. The shares are taken
// by compare-and-swap, so loops counting at once never pass a share
// together (a check then an add would let each of them see the room
// another is taking). Unlike an answer, a request never passes alone: a
// request that does not fit waits, unread, in the kernel (B2), and
// nothing is counted. Bytes read are never a reason to stop reading below
// floor (one read).
func (b *Budget) Fits(in, floor int64) bool {
	d := in - b.Inbound
	switch {
	case in <= floor || d <= 0:
		b.SyncInbound(in)
		return true
	case b.Reserved+b.Outbound+in > b.Limit:
		return false
	case b.Tenant != nil && !b.Tenant.take(d):
		return false
	case b.Replica != nil && !b.Replica.take(d):
		if b.Tenant != nil {
			b.Tenant.used.Add(-d)
		}
		return false
	}
	b.Inbound = in
	if b.Requests != nil {
		b.Requests.used.Add(d)
	}
	return true
}

// InboundRoom returns how many bytes beyond held the connection may hold
// read and not handled now, as Fits would judge it (the shares may change
// before Fits takes them): a read on is asked for no more (issue 35.1).
func (b *Budget) InboundRoom(held int64) int64 {
	r := b.Limit - b.Reserved - b.Outbound - held
	if b.Tenant != nil {
		r = min(r, b.Tenant.Limit-b.Tenant.used.Load()+b.Inbound-held)
	}
	if b.Replica != nil {
		r = min(r, b.Replica.Limit-b.Replica.used.Load()+b.Inbound-held)
	}
	return r
}

// take adds d (> 0) to the bytes held if they stay within the limit.
func (s *Shared) take(d int64) bool {
	for {
		u := s.used.Load()
		if u+d > s.Limit {
			return false
		}
		if s.used.CompareAndSwap(u, u+d) {
			return true
		}
	}
}

// Share counts what the connection holds (reserved, unread, read and not
// handled) in a tenant's share it joins (at authentication).
func (b *Budget) Share(t *Shared) {
	b.Tenant = t
	if t != nil {
		t.used.Add(b.Reserved + b.Outbound + b.Inbound)
	}
}

// Reserve takes n bytes for a forwarded request.
func (b *Budget) Reserve(n int64) {
	b.Reserved += n
	b.shares(n)
}

// Release gives back n bytes reserved.
func (b *Budget) Release(n int64) {
	b.Reserved -= n
	b.shares(-n)
}
