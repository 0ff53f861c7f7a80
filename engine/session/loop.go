package session

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/engine/conn"
	"github.com/flexway/flexway/engine/splice"
	"github.com/flexway/flexway/relay"
	"github.com/panjf2000/gnet/v2"
)

// Loop is the sessions' state of one event loop; touched on that loop
// only, except pending (read by the engine's stop).
type Loop struct {
	env     *Env
	el      gnet.EventLoop
	fc      *conn.Loop // the flow-control mechanism's state of the loop (flow.go)
	clients map[*Client]struct{}
	held    []*Client
	// reading: clients paused until what they sent fits their budgets,
	// asked again at each tick (inbound.go)
	reading []*Client
	// draining: broker connections of gone clients, closed once flushed
	draining []*upstreamConn
	pending  atomic.Int64
	lastFull time.Time
	// pendings: the Pendings its clients' queues recycle (an idle
	// connection holds none)
	pendings relay.Pendings

	// scratch: the gateway's own answers are built here (ApiVersions,
	// SASL), then written or queued by a copy: an idle connection keeps
	// no buffer of its own (issue 35.3)
	scratch []byte
	// judge: what decide judges a request or rewrites an answer in, shared
	// by the loop's sessions (decide.Scratch: one at a time, the frame it
	// holds written or copied before the next)
	judge decide.Scratch

	// muted: clients throttled by a quota until their time (quota.go)
	muted map[*Client]struct{}
	// out: the writes of the traffic event under way (coalesce.go)
	out batches
	// pp: the pipe the loop splices records through (splice_pass.go),
	// nil until first used; ppFailed: uses left before making one is
	// tried again.
	pp       *splice.Pipe
	ppFailed int

	// id numbers the loop in the order of first use (the watchdog's
	// lines); ticked: when its tick last ran (unix ns), read by the
	// watchdog from its own goroutine; tickPosted: a tick is posted and
	// has not run yet (a stuck loop holds one, not one per SweepEvery).
	id         int
	ticked     atomic.Int64
	tickPosted atomic.Bool
	// lastActive: its last traffic event or task other than its tick (unix
	// ns); quiet: none for QuietAfter and nothing waits on its tick, set at
	// its tick, cleared at its next traffic, read by the ticker (rest.go).
	lastActive int64
	quiet      atomic.Bool
	// sweep is the task PostTick posts, made with the loop: one is posted
	// at a time (tickPosted), and its fields never change, so the ticker
	// allocates nothing of its own per tick.
	sweep task
}

// loopOf returns the state of a gnet loop (made at its first use).
func (env *Env) loopOf(el gnet.EventLoop) *Loop {
	env.loopsMu.Lock()
	defer env.loopsMu.Unlock()
	l := env.loops[el]
	if l == nil {
		l = &Loop{env: env, el: el, clients: map[*Client]struct{}{}, id: len(env.loops)}
		l.ticked.Store(time.Now().UnixNano())
		l.quiet.Store(true) // its first traffic wakes a resting ticker
		l.fc = conn.NewLoop(el, env.recoverConn, &env.Flow)
		l.fc.SetReadOn(env.Tune.ReadFirst, env.Tune.ReadOn)
		l.sweep = task{l: l, where: "sweep", fn: l.postedTick, took: env.Series.LoopTask}
		env.loops[el] = l
		env.loopList = append(env.loopList, l)
	}
	return l
}

// Loops returns the loops' states, in the order they were made; the
// caller reads it and does not change it (the ticker's, every SweepEvery:
// no copy is made).
func (env *Env) Loops() []*Loop {
	env.loopsMu.Lock()
	defer env.loopsMu.Unlock()
	return env.loopList
}

// Run runs fn on the loop through its one guarded entry (task.Run): a
// panic in it is recovered, logged with its stack and counted, the engine
// serves on; then the pauses it asked are applied (Settle). An error: the
// loop is gone, fn never runs.
func (l *Loop) Run(where string, fn func()) error { return l.RunFor(where, nil, fn) }

// RunFor is Run for a task that serves one connection x (a *Client): a
// panic in it closes that connection (Env.Recovered, invariant 8).
func (l *Loop) RunFor(where string, x any, fn func()) error {
	return l.post(&task{l: l, where: where, x: x, fn: fn, took: l.env.Series.LoopTask})
}

// task is work posted to a loop from another goroutine (a worker's
// verdict, a timer, a dial's end, the tick). Every task reaches gnet
// through post and runs through Run: none runs outside the recover that
// guards the loop's callbacks (invariant 8; TestOneEntryPostsToTheLoops).
type task struct {
	l     *Loop
	where string // the log's "where" on a panic
	x     any    // the connection it serves, closed on a panic; nil: none
	fn    func()
	took  *metrics.PrometheusHistogram // how long it held the loop
}

// post hands t to the loop: the only call of gnet's Execute in the
// sessions (engine/conn's Loop.run is the mechanism's, with the same
// guard).
func (l *Loop) post(t *task) error { return l.el.Execute(context.Background(), t) }

// Run implements gnet.Runnable: t on its loop, guarded.
func (t *task) Run(context.Context) error {
	l, now := t.l, time.Now()
	if t.took != nil {
		defer t.took.UpdateDuration(now)
	}
	defer l.fc.Settle() // after the recovery: the pauses it asked
	defer l.env.recoverConn(t.x, t.where)
	if t != &l.sweep {
		l.active(now.UnixNano())
	}
	if hook := l.env.Hooks.Task.Load(); hook != nil {
		(*hook)(l, t.where, t.x)
	}
	t.fn()
	return nil
}

// Traffic runs x's traffic event (a client's or a broker connection's
// handle): its writes batched and flushed at the end, then the pauses it
// asked applied (Settle). false: x is no session's.
func Traffic(x *conn.Conn) bool {
	lp := OwnerLoop(x.Owner())
	if lp == nil {
		return false
	}
	start := time.Now()
	lp.active(start.UnixNano())
	defer lp.tickIfDue(start)                           // last: the event's writes and pauses done
	defer lp.env.Series.LoopEvent.UpdateDuration(start) // after the pauses below are applied
	defer lp.fc.Settle()                                // after the flush below
	lp.out.begin()
	defer lp.out.end()
	x.Traffic()
	return true
}

// PostTick posts the loop's tick (Tick) from the engine's ticker, unless
// the one posted before has not run yet, or the loop ticked less than a
// SweepEvery ago: a loop busy with traffic ticks itself every half
// SweepEvery (tickIfDue), so the ticker finds its tick fresh and a loop
// awake for its traffic is not woken again for its tick (issue 35.1). The
// longest a loop goes unticked is two SweepEvery, once, when its traffic
// stops.
func (l *Loop) PostTick() {
	if time.Now().UnixNano()-l.ticked.Load() < int64(SweepEvery) {
		return
	}
	if !l.tickPosted.CompareAndSwap(false, true) {
		return
	}
	if err := l.post(&l.sweep); err != nil {
		l.tickPosted.Store(false) // the loop is gone
	}
}

// postedTick is the task PostTick posts (Loop.sweep).
func (l *Loop) postedTick() {
	l.tickPosted.Store(false)
	l.Tick(time.Now())
}

// tickIfDue runs the loop's tick at the end of a traffic event when the
// last one is half a SweepEvery old or more: a busy loop ticks itself,
// between two events, and the ticker's task is not needed (PostTick). A
// panic in it closes no connection (as the ticker's task).
func (l *Loop) tickIfDue(now time.Time) {
	if now.UnixNano()-l.ticked.Load() < int64(SweepEvery/2) {
		return
	}
	defer l.fc.Settle() // after the recovery: the pauses it asked
	defer l.env.recoverConn(nil, "sweep")
	l.Tick(now)
}

// Ticked returns when the loop's tick last ran (its first use before the
// first); from any goroutine. A loop stuck in a callback or a task stops
// ticking: the watchdog stops telling systemd it lives (P1).
func (l *Loop) Ticked() time.Time { return time.Unix(0, l.ticked.Load()) }

// ID numbers the loop in the order of its first use.
func (l *Loop) ID() int { return l.id }

// Tick is the loop's sweep (sweep.go), the unmutes due (quota.go) and the
// flow mechanism's tick; run on the loop (Run).
func (l *Loop) Tick(now time.Time) {
	l.ticked.Store(now.UnixNano())
	l.env.sweep(l)
	l.env.sweepMuted(l)
	l.fc.Tick(now)
	l.settleQuiet(now)
}

// Pending is the number of requests forwarded and not yet answered.
func (l *Loop) Pending() int64 { return l.pending.Load() }

// Stop closes what the loop held once gnet's loops returned: the sockets
// a pause detached (conn.Loop.Stop) and its pipe.
func (l *Loop) Stop() {
	l.fc.Stop()
	l.closePipe()
}
