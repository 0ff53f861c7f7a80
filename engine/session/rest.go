package session

// The engine's ticker at rest (invariant 37). The ticker posts each loop
// its tick every SweepEvery, so that a loop with traffic never waits in
// epoll_wait long enough for Go's sysmon to take its P back. A gateway
// with no traffic, or with a little (a consumer's long poll every 500 ms,
// its heartbeats), has little to gain from it: it woke some 125 times a
// second (a timer, a task, the loop's wake and gnet's yield), some 700
// context switches and 20-25 ms of CPU a second. When every loop is quiet
// (no traffic event or task for QuietAfter, and nothing that waits on its
// tick: no client held, paused for its budgets or muted by a quota, no
// broker connection draining, no socket the flow mechanism looks at), the
// ticker rests between two ticks, IdleTick at most, and the first traffic
// event or task on a loop wakes it.
//
// A loop and the ticker cross with two flags: the loop clears its own
// quiet flag at its first event and then looks at the ticker's asleep;
// the ticker sets asleep and then looks at every loop's quiet. Go's
// atomics are sequentially consistent: either the ticker sees the loop
// awake and does not rest, or the loop sees the ticker resting and wakes
// it.

import (
	"sync/atomic"
	"time"
)

// IdleTick is the longest the ticker rests: the deadlines the sweep checks
// once a second (auth_timeout, idle_timeout, B3's write timeout) keep
// their second. Under systemd's watchdog it is shorter (BoundRest).
const IdleTick = time.Second

// QuietAfter: a loop with no traffic event or task for this long, and
// nothing that waits on its tick, is quiet. Traffic closer than it keeps
// the 8 ms tick (requests every 67 ms cost half as much again with 40 ms
// here; 100 ms costs nothing more at 8 to 40 requests a second).
const QuietAfter = 100 * time.Millisecond

// rest is the ticker's state at rest, shared by the loops.
type rest struct {
	asleep  atomic.Bool   // the handshake with the loops (set before they are looked at)
	resting atomic.Bool   // in the rest itself (tests: Resting)
	wake    chan struct{} // one wake-up at a time (capacity 1)
	most    atomic.Int64  // the longest rest (ns): IdleTick, or less (BoundRest)
	timer   *time.Timer   // the ticker's own (one goroutine)
}

// BoundRest makes the ticker rest at most d (the watchdog: every loop's
// tick must be younger than its period's half).
func (env *Env) BoundRest(d time.Duration) {
	if d > 0 && d < time.Duration(env.rest.most.Load()) {
		env.rest.most.Store(int64(d))
	}
}

// Rest is the ticker's, after it posted the loops' ticks: while every loop
// is quiet it returns after IdleTick (BoundRest), at a loop's wake-up
// (WakeTicker), or when stop is closed; otherwise at once. true: it rested.
func (env *Env) Rest(stop <-chan struct{}) bool {
	r := &env.rest
	select {
	case <-r.wake: // a wake-up that came after the last rest ended
	default:
	}
	r.asleep.Store(true)
	for _, l := range env.Loops() {
		if !l.quiet.Load() {
			r.asleep.Store(false)
			return false
		}
	}
	// The ticker then waits its SweepEvery too: the tick comes a little
	// over IdleTick apart, so the sweep's pass once a second runs at each.
	d := time.Duration(r.most.Load())
	if r.timer == nil {
		r.timer = time.NewTimer(d)
	} else {
		r.timer.Reset(d)
	}
	r.resting.Store(true)
	select {
	case <-r.wake:
	case <-r.timer.C:
	case <-stop:
	}
	r.resting.Store(false)
	r.asleep.Store(false)
	return true
}

// WakeTicker ends the ticker's rest, if it rests; from any goroutine.
func (env *Env) WakeTicker() {
	if env.rest.asleep.CompareAndSwap(true, false) {
		select {
		case env.rest.wake <- struct{}{}:
		default:
		}
	}
}

// Resting reports whether the ticker rests (tests).
func (env *Env) Resting() bool { return env.rest.resting.Load() }

// active marks the loop's traffic: an event or a task other than its tick.
// On the loop; one atomic load when the loop was not quiet.
func (l *Loop) active(now int64) {
	l.lastActive = now
	if l.quiet.Load() {
		l.quiet.Store(false)
		l.env.WakeTicker()
	}
}

// settleQuiet says, at the end of the loop's tick, whether it is quiet.
func (l *Loop) settleQuiet(now time.Time) {
	q := now.UnixNano()-l.lastActive >= int64(QuietAfter) &&
		len(l.held) == 0 && len(l.reading) == 0 && len(l.draining) == 0 && len(l.muted) == 0 &&
		l.fc.Quiet()
	l.quiet.Store(q)
}
