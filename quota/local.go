package quota

import (
	"sync"
	"sync/atomic"
	"time"
)

// Local is a Store of this replica alone: what it counts is all there is
// (no server.counters). Its counters are atomics: safe from every loop,
// no allocation per call.
type Local struct {
	mu       sync.Mutex
	counters map[localKey]*localCounter
}

type localKey struct {
	name   string
	window Window
}

// NewLocal returns an empty local store.
func NewLocal() *Local { return &Local{counters: map[localKey]*localCounter{}} }

// Counter implements Store.
func (l *Local) Counter(name string, w Window) Counter {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := localKey{name, w}
	c := l.counters[k]
	if c == nil {
		c = &localCounter{w: w}
		l.counters[k] = c
	}
	return c
}

// Close implements Store.
func (l *Local) Close() error { return nil }

// localCounter is one count over its window: the window's index (24 low
// bits, <<40) and the count (40 bits) in one word, reset by the first Add
// of a new window. A Running count is the whole word, never reset.
type localCounter struct {
	w Window
	v atomic.Uint64
}

const countBits = 40

// WindowIndex numbers the UTC window of w holding now (days and months
// since the epoch), 24 bits: only equality matters.
func WindowIndex(w Window, now time.Time) uint64 {
	u := now.UTC()
	var i int64
	switch w {
	case Month:
		i = int64(u.Year())*12 + int64(u.Month())
	default: // Day (Running has no window)
		i = u.Unix() / 86400
	}
	return uint64(i) & (1<<(64-countBits) - 1)
}

func (c *localCounter) Add(now time.Time, n int64) {
	if c.w == Running {
		if n > 0 {
			c.v.Add(uint64(n))
		}
		return
	}
	idx := WindowIndex(c.w, now)
	for {
		v := c.v.Load()
		cur := v & (1<<countBits - 1)
		if v>>countBits != idx {
			cur = 0
		}
		next := min(cur+uint64(max(n, 0)), 1<<countBits-1)
		if c.v.CompareAndSwap(v, idx<<countBits|next) {
			return
		}
	}
}

func (c *localCounter) Total(now time.Time) int64 {
	v := c.v.Load()
	if c.w == Running {
		return int64(v)
	}
	if v>>countBits != WindowIndex(c.w, now) {
		return 0
	}
	return int64(v & (1<<countBits - 1))
}

// BudgetName is the shared counter's name of a tenant's day/month budget
// under a quota policy (the policy's name, as HTTP counts it).
func BudgetName(policy, tenant string) string { return "quota:" + policy + ":" + tenant }
