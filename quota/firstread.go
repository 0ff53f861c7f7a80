package quota

import (
	"log/slog"
	"time"
)

// FirstReadWait bounds the wait of a principal's first request on a
// replica for its buckets' first read from the shared store (issue 34.5):
// past it (or past max_throttle, if shorter), the request is judged on
// this replica's buckets alone, and a line says so. The read is a round
// trip to the store (a store down fails it within its own timeout, and
// then the buckets decide alone, as they do while it is unreachable).
const FirstReadWait = 500 * time.Millisecond

// firstReadPoll is the first wait for the read: the waits then double (a
// request waits a round trip to the store, not a poll period; a storm of
// new principals polls a few times each, not every millisecond).
const firstReadPoll = time.Millisecond

// lateLogEvery bounds the line of a first read that did not land in time.
const lateLogEvery = time.Minute

// firstRead is how long the principal's request must wait for the first
// read of its buckets and its tenant's (Ready) from the shared store
// (0: read, or waited long enough). The read itself is the store's, off
// the loop (made at once when a counter is made: quota/counters); the
// request is held meanwhile as a throttled one is (muted, not read), so
// the loop never waits. Once read, it stays read: one atomic load per
// request after.
func (p *Principal) firstRead(now time.Time, l *Limits) time.Duration {
	if p.bucketsRead() {
		p.read.Store(true)
		return 0
	}
	bound := FirstReadWait
	if l.MaxThrottle > 0 {
		bound = min(bound, l.MaxThrottle)
	}
	waited := time.Duration(now.UnixNano() - p.since)
	if waited >= bound {
		if !p.read.Swap(true) {
			p.reg.late(p, waited)
		}
		return 0
	}
	return min(max(waited, firstReadPoll), bound-waited)
}

// bucketsRead reports whether every bucket of the principal and its tenant
// has been read from the store once.
func (p *Principal) bucketsRead() bool {
	for k := range NumKinds {
		if !bucketRead(&p.Buckets[k]) || !bucketRead(&p.Tenant.Buckets[k]) {
			return false
		}
	}
	return true
}

func bucketRead(b *Bucket) bool { return b.ctr == nil || CounterReady(b.ctr) }

// late says, a line a minute at most, that a principal's first request
// went on before its buckets were read from the shared store.
func (r *Registry) late(p *Principal, waited time.Duration) {
	now := time.Now().UnixNano()
	last := r.lateLog.Load()
	if last != 0 && now-last < int64(lateLogEvery) || !r.lateLog.CompareAndSwap(last, now) {
		return
	}
	log := r.Log
	if log == nil {
		log = slog.Default()
	}
	log.Warn("quota buckets not yet read from the shared counter store: deciding on this replica's counts",
		"tenant", p.Tenant.Name, "waited", waited.String())
}
