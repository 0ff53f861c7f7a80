package quota

import (
	"math"
	"sync/atomic"
	"time"
)

// Kind is what a bucket counts (listeners.kafka.quotas.<scope>.<kind>).
type Kind uint8

const (
	// ProduceBytes: the whole Produce request frames (producer_byte_rate).
	ProduceBytes Kind = iota
	// FetchBytes: the Fetch answers (consumer_byte_rate).
	FetchBytes
	// Requests: every request after authentication (request_rate).
	Requests
	// NumKinds is the number of kinds.
	NumKinds
)

// KindNames are the configuration's names of the kinds, by Kind.
var KindNames = [NumKinds]string{"producer_byte_rate", "consumer_byte_rate", "request_rate"}

// maxDebt bounds what a bucket may owe: a rate lowered by a reload (or a
// client that keeps spending past max_throttle) cannot push the bucket's
// clock out of range. An hour of debt is far past any max_throttle (30 s).
const maxDebt = int64(time.Hour)

// Bucket is one token bucket, written as a virtual clock (GCRA): tat is the
// instant (Unix ns) at which everything spent so far is paid at the rate.
// A bucket holds rate × window: spending is free while tat stays within
// window of now; past that, the excess is the throttle. One atomic word,
// moved by compare-and-swap: a tenant's bucket is spent from every loop at
// once with no lock (DESIGN.md, invariant 32).
//
// The zero Bucket is ready, purely local; SetCounter makes it count through
// a shared Counter as well.
type Bucket struct {
	tat  atomic.Int64 // Unix ns: when the debt is paid
	rate atomic.Int64 // the rate tat was last moved at (0: never)
	ctr  Counter      // nil: local only
	// acc, with ctr: the second (24 low bits, <<40) and the shared total
	// (40 bits) already charged to tat by any loop.
	acc atomic.Uint64
}

// SetCounter makes b count through c (a Store's Counter over Second): what
// the other replicas spend is charged to b as it is seen. Call it before b
// is shared.
func (b *Bucket) SetCounter(c Counter) { b.ctr = c }

// Spend charges n units at rate per second with a depth of window (ns),
// and returns the excess: how long (ns) the spender must wait for the
// bucket to be within its depth again (<= 0: not throttled). rate <= 0
// means no bound: nothing is charged.
func (b *Bucket) Spend(now time.Time, n, rate, window int64) int64 {
	if rate <= 0 {
		return 0
	}
	t := now.UnixNano()
	if b.rate.Load() != rate {
		b.rerate(t, rate)
	}
	if b.ctr != nil {
		n = b.shared(now, n)
	}
	cost := n * int64(time.Second) / rate
	if n > 0 && cost == 0 {
		cost = 1
	}
	for {
		old := b.tat.Load()
		nt := max(old, t) + cost
		if nt-t > maxDebt {
			nt = t + maxDebt
		}
		if b.tat.CompareAndSwap(old, nt) {
			return nt - t - window
		}
	}
}

// Debt is how long (ns) b stays past its depth if nothing more is spent
// (<= 0: within it).
func (b *Bucket) Debt(now time.Time, rate, window int64) int64 {
	if rate <= 0 {
		return 0
	}
	return b.tat.Load() - now.UnixNano() - window
}

// Paid reports whether b owes nothing at now: a bucket paid can be
// forgotten (made again, it is the same).
func (b *Bucket) Paid(now time.Time) bool { return b.tat.Load() <= now.UnixNano() }

// rerate converts the debt to a new rate (a reload): what was spent is
// kept, in units, and paid at the new rate from now on. Two loops
// converting at once may convert twice a debt of a few ms: harmless.
func (b *Bucket) rerate(t, rate int64) {
	old := b.rate.Swap(rate)
	if old <= 0 {
		return
	}
	for {
		tat := b.tat.Load()
		debt := tat - t
		if debt <= 0 {
			return
		}
		nd := int64(math.Min(float64(debt)*float64(old)/float64(rate), float64(maxDebt)))
		if b.tat.CompareAndSwap(tat, t+nd) {
			return
		}
	}
}

const accBits = 40

// shared adds n to the shared counter and returns what is to be charged
// locally: the growth of the replicas' total since any loop last charged
// it (n among it), so that every unit counted anywhere is charged once.
func (b *Bucket) shared(now time.Time, n int64) int64 {
	b.ctr.Add(now, n)
	tot := uint64(max(b.ctr.Total(now), 0)) & (1<<accBits - 1)
	sec := uint64(now.Unix()) & (1<<(64-accBits) - 1)
	for {
		a := b.acc.Load()
		seen := a & (1<<accBits - 1)
		if a>>accBits != sec {
			seen = 0
		}
		if tot <= seen {
			return 0
		}
		if b.acc.CompareAndSwap(a, sec<<accBits|tot) {
			return int64(tot - seen)
		}
	}
}
