package counters

import (
	"sync/atomic"
	"time"

	"github.com/flexway/flexway/quota"
)

// A slot holds one window's counts in a word each: the window's tag in the
// top 16 bits, the count in the low 48. Add and Total read and swap the
// word (a CAS loop, no lock): a count and the window it belongs to always
// change together, so a window's rollover needs no lock either.
//
// The tag is the window's number modulo 65535, plus one (0: the slot is
// empty). Two windows of one tag lie 65535 windows apart (179 years of
// days): the reconciliation empties every finished window's slot at its
// next sync, long before. (A Running counter has no slots: running.go.)
const (
	tagShift  = 48
	countMask = 1<<tagShift - 1
	tagMod    = 65535
)

func tagOf(w int64) uint64 {
	t := w % tagMod
	if t < 0 {
		t += tagMod
	}
	return uint64(t) + 1
}

// windowOfTag is the window of tag t nearest cur (the reconciliation's
// window): at or before it, or just after it (a caller's clock a little
// ahead).
func windowOfTag(t uint64, cur int64) int64 {
	d := (int64(tagOf(cur)) - int64(t) + tagMod) % tagMod
	if d > tagMod/2 {
		return cur + (tagMod - d)
	}
	return cur - d
}

// slot is one of a counter's two windows in flight (the window's number's
// parity picks it): the one that holds now, and the one before it, kept
// until its last delta reached Redis.
type slot struct {
	local  atomic.Uint64 // tag | this replica's exact count
	others atomic.Uint64 // tag | the other replicas' count at the last sync

	// The reconciliation's own (one goroutine): how much of local Redis
	// holds, for window sentWin.
	sentWin int64
	sent    int64
}

// counter is a quota.Counter.
type counter struct {
	name   string
	window quota.Window
	slots  [2]slot // Day, Month

	// Running: this replica's spending ever, and the others' as learned
	// (both only grow; unsigned: a wrap is a difference like another).
	mine, others atomic.Uint64
	run          *running // the reconciliation's own bookkeeping

	// ready: its first reconciliation has run, done or failed
	// (quota.Ready); a store without Redis makes it ready.
	ready atomic.Bool

	// Running: its bucket's clock (quota.Clocked: nil until Watch), and the
	// latest clock of every replica the last read found in the hash.
	tat     atomic.Pointer[atomic.Int64]
	learned atomic.Int64
}

// Watch implements quota.Clocked: the clock is published and raised by
// the reconciliation (running.go); raised now to what the last read
// learned, if the counter was read before (a bucket made again).
func (c *counter) Watch(tat *atomic.Int64) {
	c.tat.Store(tat)
	if v := c.learned.Load(); v > 0 {
		quota.RaiseClock(tat, v)
	}
}

// Ready implements quota.Ready.
func (c *counter) Ready() bool { return c.ready.Load() }

var _ quota.Counter = (*counter)(nil)

func (c *counter) Add(now time.Time, n int64) {
	if n <= 0 {
		return
	}
	if c.window == quota.Running {
		c.mine.Add(uint64(n))
		return
	}
	w := windowOf(c.window, now)
	t := tagOf(w)
	s := &c.slots[w&1]
	for {
		old := s.local.Load()
		var nv uint64
		if old>>tagShift == t {
			cnt := old&countMask + uint64(n)
			if cnt > countMask || uint64(n) > countMask {
				cnt = countMask
			}
			nv = t<<tagShift | cnt
		} else {
			// The slot held an older window (or nothing): this window
			// starts. What the older one held was sent at the sync that
			// followed its end (or waits in pending: see DESIGN.md).
			nv = t<<tagShift | min(uint64(n), countMask)
		}
		if s.local.CompareAndSwap(old, nv) {
			return
		}
	}
}

func (c *counter) Total(now time.Time) int64 {
	if c.window == quota.Running {
		return int64(c.mine.Load() + c.others.Load())
	}
	w := windowOf(c.window, now)
	t := tagOf(w)
	s := &c.slots[w&1]
	var total int64
	if v := s.local.Load(); v>>tagShift == t {
		total += int64(v & countMask)
	}
	if v := s.others.Load(); v>>tagShift == t {
		total += int64(v & countMask)
	}
	return total
}

// setOthers records the others' count of window w.
func (s *slot) setOthers(w int64, n int64) {
	if n < 0 {
		n = 0
	}
	s.others.Store(tagOf(w)<<tagShift | min(uint64(n), countMask))
}
