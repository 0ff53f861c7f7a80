package engine

// Invariant 37, the ticker at rest (session/rest.go): a gateway whose
// loops are quiet is ticked once per IdleTick, not every SweepEvery; its
// deadlines are still checked; the first request wakes the ticker, and
// the loop is ticked every SweepEvery again until it is quiet once more.
// Under systemd's watchdog the rest is bounded so that the pings go on.

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/engine/session"
)

// servedLoop dials a client that is served once, and returns it and its loop.
func servedLoop(t *testing.T, env *testEnv) (*rawConn, *session.Loop) {
	t.Helper()
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	servedOrders(t, r)
	return r, clientOf(t, env.e, r).Loop()
}

// sweepsOf counts the ticks posted to loop l.
func sweepsOf(t *testing.T, env *testEnv, l *session.Loop) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	hook := func(at *session.Loop, where string, _ any) {
		if at == l && where == "sweep" {
			n.Add(1)
		}
	}
	env.e.env.Hooks.Task.Store(&hook)
	t.Cleanup(func() { env.e.env.Hooks.Task.Store(nil) })
	return &n
}

func TestQuietEngineRestsAndWakesAtTraffic(t *testing.T) {
	env := newTestEnv(t, "    idle_timeout: 1h\n")
	r, target := servedLoop(t, env)
	sweeps := sweepsOf(t, env, target)

	waitUntil(t, 10*time.Second, "the ticker rests once the loops are quiet", env.e.env.Resting)
	// The measure: three seconds at rest, the connection open and idle.
	n0, t0 := sweeps.Load(), target.Ticked()
	time.Sleep(3 * time.Second)
	rest := sweeps.Load() - n0
	t.Logf("%d ticks posted in 3 s at rest", rest)
	if rest > 6 {
		t.Errorf("%d ticks posted to a quiet loop in 3 s: the ticker does not rest (one per %v)", rest, session.IdleTick)
	}
	if rest < 1 || !target.Ticked().After(t0) {
		t.Errorf("%d ticks in 3 s at rest: the quiet loop is not ticked, its deadlines not checked", rest)
	}

	// A request wakes the ticker: the loop is ticked every SweepEvery again
	// for QuietAfter (some 12 ticks); resting on, the ticker would post
	// three in some two seconds.
	n1 := sweeps.Load()
	servedOrders(t, r)
	start := time.Now()
	waitUntil(t, 10*time.Second, "three ticks after the request", func() bool { return sweeps.Load() >= n1+3 })
	if d := time.Since(start); d > session.IdleTick/2 {
		t.Errorf("three ticks took %v after a request: the request did not wake the ticker", d)
	}
	waitUntil(t, 10*time.Second, "the ticker resting again", env.e.env.Resting)
	servedOrders(t, r) // served after the rest as before it
}

// L3's deadlines hold at rest: a client that authenticates and then does
// nothing is closed at idle_timeout, within a tick of the rest.
func TestQuietEngineKeepsItsDeadlines(t *testing.T) {
	env := newTestEnv(t, "    idle_timeout: 3s\n")
	other := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	servedOrders(t, other)
	waitUntil(t, 10*time.Second, "the ticker rests", env.e.env.Resting)
	start := time.Now()
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	r.expectClosed(3*time.Second + 2*session.IdleTick + 2*time.Second)
	if d := time.Since(start); d < 2900*time.Millisecond {
		t.Fatalf("closed after %v, before idle_timeout", d)
	}
}

// Under the watchdog the rest is at most a quarter of its period: the
// loops' ticks stay younger than its half, and a quiet engine is pinged.
func TestWatchdogPingsAQuietEngine(t *testing.T) {
	env := newTestEnv(t, "")
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	servedOrders(t, r)
	got, every := runWatchdog(t, env)
	waitUntil(t, 10*time.Second, "the ticker rests", env.e.env.Resting)
	n := got.count()
	waitUntil(t, 10*time.Second, "three pings at rest", func() bool { return got.count() >= n+3 })
	if loop, late, stuck := env.e.StuckLoop(every / 2); stuck {
		t.Fatalf("loop %d seen stuck at rest (tick %v old)", loop, late)
	}
	noLogLine(t, env, "a loop does not answer its tick", "the watchdog withheld a ping at rest")
}
