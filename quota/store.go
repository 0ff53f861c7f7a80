// Package quota holds the gateway's quotas (issue 8, SPEC Q1-Q3): the token
// buckets of listeners.kafka.quotas per verified principal and per tenant
// (KIP-219 throttling), and the day/month budgets of the `quota` policies.
//
// This file is the contract between the buckets, decided inline on the
// reactor's loops, and the store that shares counts between the replicas
// of one deployment (server.counters: a Redis, package quota/counters).
package quota

import (
	"sync/atomic"
	"time"
)

// Window is the span a Counter counts over; a Day or Month count starts
// again at zero with each new window, a Running count never does.
type Window uint8

const (
	// Day is the UTC day (the policy's limits.day).
	Day Window = iota
	// Month is the UTC month (the policy's limits.month).
	Month
	// Running is no window: the spending of a rate bucket, shared so that
	// the replicas hold a rate together. Its Total only grows (the time is
	// not read): this replica's spending, exact, plus the others' as the
	// reconciliation learns it, whenever it was spent. A bucket charges the
	// growth it has not charged yet (DESIGN.md, invariants 22 and 32), so no
	// spending is lost to a window that ended before it was learned.
	Running
)

// Store keeps counts shared by the replicas of one deployment. A replica
// decides alone, on its loop, from its own exact count plus what the others
// had spent at the last reconciliation (every `sync`, off the loop, batched).
// A store that cannot reach its backend keeps counting locally and
// reconciles when it is back; it never blocks a caller.
type Store interface {
	// Counter returns the counter named name over window, made at the first
	// call and the same one after: callers keep the handle (a tenant's, made
	// when the tenant is first seen), so the request path never names it.
	Counter(name string, window Window) Counter
	// Close stops the reconciliation after a last one, bounded in time.
	Close() error
}

// Counter is one shared count. Its methods are safe from every loop at
// once (atomics, no lock shared with the reconciliation on the hot path)
// and allocate nothing.
type Counter interface {
	// Add spends n now, on this replica.
	Add(now time.Time, n int64)
	// Total is what every replica has spent in the window that holds now
	// (Running: ever, now not read): this replica's exact count plus the
	// others' as of the last sync.
	Total(now time.Time) int64
}

// Ready is what a shared store's Counter also says: whether its total has
// been read from the store once since it was made (its first
// reconciliation, done or failed). Until then a replica that has just
// started knows only its own count, none of what was spent before it
// started (issue 22.4): a day or month budget waits for the first read
// rather than deciding on nothing. A Counter without it is always ready.
type Ready interface {
	Ready() bool
}

// CounterReady reports whether c may be decided on (Ready).
func CounterReady(c Counter) bool {
	r, ok := c.(Ready)
	return !ok || r.Ready()
}

// Clocked is what a shared store's Running Counter (a rate bucket's) also
// does: it carries the bucket's state between replicas, not only its
// spending, so that a principal in debt on one replica is in debt on
// another from its first request there (issue 34.5). The spending learned
// tells a bucket what the others spend from its first read on; what they
// spent before is over with its time, except the part not yet paid: that
// is the bucket's clock (Bucket's tat, Unix ns), which the store carries.
type Clocked interface {
	// Watch gives the counter its bucket's clock, read and raised off the
	// request path: the store publishes it at each sync while it is ahead
	// of now (the store keeps the latest of every replica's), and raises it
	// to the store's whenever the counter's read is a new start (its first,
	// one after an outage), and at once to what the last read learned (a
	// bucket made again for a counter already read). Call it before the
	// bucket is shared.
	Watch(tat *atomic.Int64)
}

// RaiseClock moves a bucket's clock tat up to to (never down): the debt
// another replica published is owed here too.
func RaiseClock(tat *atomic.Int64, to int64) {
	for {
		old := tat.Load()
		if old >= to || tat.CompareAndSwap(old, to) {
			return
		}
	}
}
