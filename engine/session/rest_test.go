package session

// Invariant 37, the ticker at rest (rest.go): it rests only while every
// loop is quiet, a loop's first traffic ends the rest whatever the order
// of the two, and a loop with anything that waits on its tick is never
// quiet.

import (
	"log/slog"
	"runtime"
	"testing"
	"time"
)

// restEnv is an engine's shared state with one loop (never served by
// gnet: what is posted to it is kept), the ticker's rest made endless
// so that a rest that is not woken shows.
func restEnv(t *testing.T) (*Env, *Loop) {
	t.Helper()
	env := NewEnv(slog.New(slog.DiscardHandler))
	env.rest.most.Store(int64(time.Hour))
	return env, env.loopOf(&heldLoop{})
}

// restReturns runs env.Rest in its own goroutine and returns a channel
// closed when it returns, with whether it rested.
func restReturns(env *Env, stop <-chan struct{}) (<-chan struct{}, *bool) {
	done, rested := make(chan struct{}), new(bool)
	go func() {
		defer close(done)
		*rested = env.Rest(stop)
	}()
	return done, rested
}

func TestTickerRestsOnlyWhileEveryLoopIsQuiet(t *testing.T) {
	env, l := restEnv(t)
	second := env.loopOf(&heldLoop{})
	l.quiet.Store(true)
	second.quiet.Store(false)
	if env.Rest(nil) {
		t.Fatal("the ticker rested while a loop was not quiet")
	}
	if env.Resting() {
		t.Fatal("Resting after a rest not taken")
	}
	second.quiet.Store(true)
	stop := make(chan struct{})
	done, rested := restReturns(env, stop)
	waitFor(t, "the ticker rests", env.Resting)
	close(stop)
	<-done
	if !*rested || env.Resting() {
		t.Fatalf("rested %v, resting %v after its stop", *rested, env.Resting())
	}
}

// The loop's first traffic after a quiet spell wakes the ticker, whether
// it comes before the ticker looks at the loops, while it looks, or once
// it rests: each of 2,000 rounds starts the two at once, and a rest that
// misses its wake-up lasts the hour the test set (the round's wait fails).
func TestTickerWokenByTrafficWhateverTheOrder(t *testing.T) {
	env, l := restEnv(t)
	for i := range 2000 {
		l.quiet.Store(true)
		done, _ := restReturns(env, nil)
		if i%2 == 0 {
			runtime.Gosched()
		}
		l.active(time.Now().UnixNano())
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the ticker rests on after the loop's traffic", i)
		}
		if l.quiet.Load() {
			t.Fatalf("round %d: the loop is still quiet after its traffic", i)
		}
	}
}

func TestLoopWithWorkForItsTickIsNeverQuiet(t *testing.T) {
	env, l := restEnv(t)
	_ = env
	now := time.Now()
	l.lastActive = now.Add(-2 * QuietAfter).UnixNano()
	l.settleQuiet(now)
	if !l.quiet.Load() {
		t.Fatal("a loop without traffic for two QuietAfter and nothing to do is not quiet")
	}
	l.lastActive = now.Add(-QuietAfter / 2).UnixNano()
	l.settleQuiet(now)
	if l.quiet.Load() {
		t.Fatal("quiet within QuietAfter of its traffic")
	}
	l.lastActive = now.Add(-2 * QuietAfter).UnixNano()
	cl := &Client{}
	for _, c := range []struct {
		what       string
		set, clear func()
	}{
		{"a client held for its budgets", func() { l.held = []*Client{cl} }, func() { l.held = nil }},
		{"a client paused until what it sent fits", func() { l.reading = []*Client{cl} }, func() { l.reading = nil }},
		{"a broker connection draining", func() { l.draining = []*upstreamConn{{}} }, func() { l.draining = nil }},
		{"a client muted by a quota", func() { l.muted = map[*Client]struct{}{cl: {}} }, func() { l.muted = nil }},
	} {
		c.set()
		l.settleQuiet(now)
		if l.quiet.Load() {
			t.Errorf("quiet with %s", c.what)
		}
		c.clear()
		l.settleQuiet(now)
		if !l.quiet.Load() {
			t.Errorf("not quiet once %s is gone", c.what)
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
	}
}
