package conn

import (
	"context"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/flexway/flexway/engine/kernel"
	"github.com/panjf2000/gnet/v2"
)

// Stats counts what the mechanism did: the engine's series.
type Stats struct {
	Detaches *metrics.Counter // pauses applied (sockets taken from gnet)
	Resumes  *metrics.Counter // sockets enrolled again
	Above    *metrics.Counter // write queues that passed their high mark
}

// Loop is the mechanism's state of one gnet event loop: the pauses to
// apply at the next safe point, the Conns the tick looks at (detached,
// re-enrolling, with bytes queued or without room), and the watcher. On
// its loop only.
type Loop struct {
	el    gnet.EventLoop
	guard func(x any, where string) // deferred around the tasks it runs: recovers a panic, closes x
	stats *Stats

	settle  []*Conn
	tracked map[*Conn]struct{}

	w       *kernel.Watcher
	wFailed bool
	armed   map[int32]*Conn

	// first: gnet's read size; onCap: the read-on buffer's (0: none);
	// more: that buffer (made at first use); moreBy: the Conn whose stash
	// it may hold (readon.go)
	first, onCap int
	more         []byte
	moreBy       *Conn

	ps       kernel.PollSet // the tick's poll(2)
	pcs      []*Conn        // the Conn of each descriptor in ps
	lastPoll time.Time

	one     [1][]byte // its Conns' Write's vector (not each Conn's: an idle pair's bytes, 56)
	oneBusy bool      // one is in use (a Write inside a Write's callback)
}

// NewLoop makes the mechanism's state of el. guard is deferred around the
// tasks the Loop runs on el (it must call recover itself, and close x,
// the Conn the task served, nil: none); stats may be shared by loops.
func NewLoop(el gnet.EventLoop, guard func(x any, where string), stats *Stats) *Loop {
	if stats == nil {
		stats = &Stats{}
	}
	for _, c := range []**metrics.Counter{&stats.Detaches, &stats.Resumes, &stats.Above} {
		if *c == nil {
			*c = &metrics.Counter{}
		}
	}
	return &Loop{el: el, guard: guard, stats: stats, tracked: map[*Conn]struct{}{}, armed: map[int32]*Conn{}}
}

// run runs f on the loop later, guarded: the mechanism's one way onto its
// loop (invariant 8). x: the Conn f serves, closed if f panics (nil: none).
// An error: the loop is gone, f never runs.
func (l *Loop) run(where string, x *Conn, f func()) error {
	return l.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		if l.guard != nil {
			var served any // never a nil *Conn in an interface
			if x != nil {
				served = x
			}
			defer l.guard(served, where)
		}
		f()
		return nil
	}))
}

func (l *Loop) toSettle(c *Conn) {
	if !c.settling {
		c.settling = true
		l.settle = append(l.settle, c)
	}
}

// Settle applies the pauses asked since the last safe point: the end of a
// callback (the engine calls it there), and the tick. A Conn whose reasons
// were all dropped meanwhile stays attached.
func (l *Loop) Settle() {
	if len(l.settle) == 0 {
		return
	}
	list := l.settle
	l.settle = nil
	for i, c := range list {
		list[i] = nil
		c.settling = false
		if c.st == attached && c.live != nil && c.why != 0 && !c.hup && !c.detach() {
			l.toSettle(c) // no fd left to dup: tried again at the tick
		}
	}
	if l.settle == nil {
		l.settle = list[:0]
	}
}

func (l *Loop) track(c *Conn) {
	if !c.tracked {
		c.tracked = true
		l.tracked[c] = struct{}{}
	}
}

func (l *Loop) untrack(c *Conn) {
	if c.tracked {
		c.tracked = false
		delete(l.tracked, c)
	}
}

// Tick runs at each of the engine's ticks, on the loop: pauses not applied
// yet are tried again; once a second, a peer that closed or reset while
// detached (PeerClosed, Hangup) is read again, so that its last bytes and
// its close take the normal way. A socket whose bytes wait (or without
// room) is looked at only where the watcher is not armed for it (no
// watcher, or its arming failed): the watcher is the one writable signal.
// One poll(2) for the loop, only while something is detached or unwatched.
func (l *Loop) Tick(now time.Time) {
	l.Settle()
	if len(l.tracked) == 0 {
		return
	}
	full := now.Sub(l.lastPoll) >= time.Second
	if full {
		l.lastPoll = now
	}
	l.ps.Reset()
	l.pcs = l.pcs[:0]
	for c := range l.tracked {
		switch {
		case c.st == closed && c.notified:
			l.untrack(c)
			continue
		case c.st == closed:
			continue // its owner is told by a task queued on the loop, or by Stop
		case c.st == attached && c.q.Len() == 0 && !c.full:
			l.untrack(c)
			continue
		}
		var ev kernel.Events
		if c.st == detached && full {
			ev |= kernel.PeerClosed
		}
		if (c.q.Len() > 0 || c.full) && c.wfd < 0 {
			ev |= kernel.Writable
		}
		if fd := c.Fd(); fd >= 0 && ev != 0 && c.st != resuming {
			l.ps.Add(fd, ev)
			l.pcs = append(l.pcs, c)
		}
	}
	if l.ps.Len() > 0 && l.ps.Poll(0) == nil {
		for i, c := range l.pcs {
			got := l.ps.Ready(i)
			if got&kernel.Writable != 0 {
				c.writable()
			}
			if c.st == detached && kernel.PeerGone(c.Fd(), got) {
				c.hup = true // read again whatever its reasons
				c.reenroll()
			}
		}
	}
	clear(l.pcs)
}

// Quiet reports whether the loop's tick has nothing to look at: no Conn
// tracked (detached, re-enrolling, with bytes queued or without room) and
// no pause to apply.
func (l *Loop) Quiet() bool { return len(l.tracked) == 0 && len(l.settle) == 0 }

// Stop closes the sockets the loop no longer holds and tells their
// owners, as gnet does for its own connections when it stops. It runs once
// every loop has returned: nothing runs beside it.
func (l *Loop) Stop() {
	if l.w != nil {
		l.w.Stop()
		l.w = nil
	}
	for c := range l.tracked {
		func() {
			if l.guard != nil {
				defer l.guard(nil, "close") // the loops are gone: nothing more to close
			}
			if c.st == detached || c.st == resuming {
				c.closeDetached(nil, true)
			} else if c.st == closed {
				c.notify(nil)
			}
		}()
	}
}

// Watching reports whether the loop's watcher runs (two descriptors: its
// epoll set and its eventfd, kept until Stop).
func (l *Loop) Watching() bool { return l.w != nil }

// arm asks the watcher to say when fd (c's socket) takes more; started at
// its first use. Without one, the tick looks.
func (l *Loop) arm(c *Conn, fd int) {
	if l.w == nil {
		if l.wFailed {
			return
		}
		w, err := kernel.NewWatcher()
		if err != nil {
			l.wFailed = true
			return
		}
		l.w = w
		go w.Run(func(fired []kernel.Event) { _ = l.run("writable", nil, func() { l.fire(fired) }) })
	}
	if c.wfd >= 0 && c.wfd != int32(fd) {
		delete(l.armed, c.wfd)
	}
	gen, err := l.w.Arm(fd)
	if err != nil {
		c.wfd = -1
		return // the tick looks
	}
	if o := l.armed[int32(fd)]; o != nil && o != c {
		o.wfd = -1 // its fd was closed: stale
	}
	c.wfd, c.wgen = int32(fd), gen
	l.armed[int32(fd)] = c
}

func (l *Loop) disarm(c *Conn) {
	if c.wfd < 0 {
		return
	}
	if l.armed[c.wfd] == c {
		delete(l.armed, c.wfd)
	}
	c.wfd = -1
}

// fire runs on the loop: each socket that takes more is written to.
func (l *Loop) fire(fired []kernel.Event) {
	for _, f := range fired {
		c := l.armed[f.Fd]
		if c == nil || c.wgen != f.Gen {
			continue
		}
		delete(l.armed, f.Fd)
		c.wfd = -1
		c.writable()
	}
	l.Settle()
}
