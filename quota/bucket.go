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
	// With ctr: the counter's Total already charged to tat by any loop
	// (it only grows; unsigned, so a wrap is a difference like another),
	// and when (Unix ns) a loop last charged its growth.
	seen atomic.Uint64
	look atomic.Int64
}

// SetCounter makes b count through c (a Store's Counter over Running):
// what the other replicas spend is charged to b as it is learned, from the
// moment b last looked (what they spent before now is not b's, but the
// debt they left is, when c carries it: Clocked). Call it before b is
// shared.
func (b *Bucket) SetCounter(c Counter) {
	b.ctr = c
	now := time.Now()
	b.seen.Store(uint64(c.Total(now)))
	b.look.Store(now.UnixNano())
	if cc, ok := c.(Clocked); ok {
		cc.Watch(&b.tat)
	}
}

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
	var others, from int64
	if b.ctr != nil {
		n, others, from = b.shared(now, t, n)
	}
	cost, ocost := units(n, rate), units(others, rate)
	for {
		old := b.tat.Load()
		nt := old
		if ocost > 0 {
			// The others' spending learned since the last look is charged
			// from then: a bucket idle here while they spent is not
			// charged at once for all of it, only for what is not paid.
			nt = max(nt, from) + ocost
		}
		nt = max(nt, t) + cost
		if nt-t > maxDebt {
			nt = t + maxDebt
		}
		if b.tat.CompareAndSwap(old, nt) {
			return nt - t - window
		}
	}
}

// units is the time (ns) n units take at rate; a unit spent costs 1 ns at
// least.
func units(n, rate int64) int64 {
	if n <= 0 {
		return 0
	}
	return max(n*int64(time.Second)/rate, 1)
}

// Debt is how long (ns) b stays past its depth if nothing more is spent
// (<= 0: within it).
func (b *Bucket) Debt(now time.Time, rate, window int64) int64 {
	if rate <= 0 {
		return 0
	}
	return b.tat.Load() - now.UnixNano() - window
}

// Left is what b still holds (units) at rate with a depth of window (ns):
// rate × window when paid, 0 at its depth or past it.
func (b *Bucket) Left(now time.Time, rate, window int64) int64 {
	if rate <= 0 {
		return 0
	}
	free := window - max(b.tat.Load()-now.UnixNano(), 0)
	if free <= 0 {
		return 0
	}
	return int64(float64(free) * float64(rate) / float64(time.Second))
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

// shared adds n to the shared counter and returns what is to be charged:
// the growth of the replicas' total since any loop last charged it, split
// into this spending (own, at most n) and the others' (learned since from,
// the previous look), so that every unit counted anywhere is charged once.
func (b *Bucket) shared(now time.Time, t, n int64) (own, others, from int64) {
	b.ctr.Add(now, n)
	tot := uint64(b.ctr.Total(now))
	for {
		seen := b.seen.Load()
		g := int64(tot - seen)
		if g <= 0 {
			return 0, 0, 0
		}
		if b.seen.CompareAndSwap(seen, tot) {
			own = min(max(n, 0), g)
			return own, g - own, b.look.Swap(t)
		}
	}
}
