package engine

// P1, issue 33.6: systemd's watchdog is told WATCHDOG=1 only while every
// loop answers its tick; a loop stuck in a task stops the pings (systemd
// then restarts the service), and they resume once it answers again.

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/flexway/flexway/engine/session"
)

// pings counts the WATCHDOG=1 datagrams a fake systemd notify socket
// receives (NOTIFY_SOCKET set for the test).
type pings struct {
	mu sync.Mutex
	n  int
}

func (p *pings) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func fakeNotifySocket(t *testing.T) *pings {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	p := &pings{}
	go func() {
		buf := make([]byte, 256)
		for {
			n, _, err := ln.ReadFromUnix(buf)
			if err != nil {
				return
			}
			if strings.Contains(string(buf[:n]), "WATCHDOG=1") {
				p.mu.Lock()
				p.n++
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// runWatchdog runs the engine's watchdog for the test as systemd would
// with WatchdogSec=2s (pings each second while the loops answer within
// one), to a fake notify socket whose pings it returns.
func runWatchdog(t *testing.T, env *testEnv) (*pings, time.Duration) {
	t.Helper()
	got := fakeNotifySocket(t)
	t.Setenv("WATCHDOG_USEC", "2000000")
	every, err := daemon.SdWatchdogEnabled(false)
	if err != nil || every != 2*time.Second {
		t.Fatalf("WATCHDOG_USEC read as %v (%v)", every, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		env.e.Watchdog(ctx, every, func() { _, _ = daemon.SdNotify(false, daemon.SdNotifyWatchdog) })
	}()
	t.Cleanup(func() { cancel(); <-done })
	return got, every
}

func TestWatchdogPingsOnlyWhileEveryLoopTicks(t *testing.T) {
	env := newTestEnv(t, "")
	r, target := servedLoop(t, env)
	got, every := runWatchdog(t, env)
	waitUntil(t, 10*time.Second, "two pings while every loop ticks", func() bool { return got.count() >= 2 })

	// The loop is stuck in a task: its tick waits behind it.
	release := make(chan struct{})
	var released sync.Once
	free := func() { released.Do(func() { close(release) }) }
	t.Cleanup(free)
	var blocked atomic.Bool
	hook := func(l *session.Loop, where string, _ any) {
		if l == target && where == "sweep" && blocked.CompareAndSwap(false, true) {
			<-release
		}
	}
	env.e.env.Hooks.Task.Store(&hook)
	t.Cleanup(func() { env.e.env.Hooks.Task.Store(nil) })
	env.waitLog(10*time.Second, "level=ERROR", "a loop does not answer its tick", fmt.Sprintf("loop=%d", target.ID()))
	if loop, _, stuck := env.e.StuckLoop(every / 2); !stuck || loop != target.ID() {
		t.Fatalf("StuckLoop = %d, %v; want loop %d stuck", loop, stuck, target.ID())
	}
	// No ping while it stays stuck: four of its periods pass in silence.
	n := got.count()
	time.Sleep(2 * every)
	if m := got.count(); m != n {
		t.Fatalf("%d pings sent while a loop was stuck", m-n)
	}

	free()
	env.waitLog(10*time.Second, "every loop answers its tick again")
	waitUntil(t, 10*time.Second, "pings again once the loop answers", func() bool { return got.count() > n })
	servedOrders(t, r) // the loop serves on
}

// Issue 35.1: a loop busy with traffic ticks itself between its events
// (tickIfDue), so the engine's ticker posts it no task: a loop awake for
// its traffic is not woken again for its tick. Over a second of Metadata
// round trips on one connection, the ticker's sweep tasks for its loop
// come at less than half the rate they come at while the loop is awake
// without traffic (from its last request to the ticker's rest,
// QuietAfter), and the loop's tick still runs (Ticked moves) all along.
// Once the traffic stops, the ticker's tasks come back.
func TestBusyLoopTicksItself(t *testing.T) {
	env := newTestEnv(t, "")
	r, target := servedLoop(t, env)
	sweeps := sweepsOf(t, env, target)

	// The measure: the loop awake and without traffic, until the rest.
	n0, t0 := sweeps.Load(), time.Now()
	waitUntil(t, 10*time.Second, "the ticker resting after the traffic", env.e.env.Resting)
	idle := float64(sweeps.Load()-n0) / time.Since(t0).Seconds()
	if idle < 20 {
		t.Fatalf("%.0f sweep tasks a second without traffic: the ticker posts every %v", idle, session.SweepEvery)
	}

	n1, ticks, last, start := sweeps.Load(), 0, target.Ticked(), time.Now()
	for time.Since(start) < time.Second {
		servedOrders(t, r)
		if at := target.Ticked(); at != last {
			ticks, last = ticks+1, at
		}
	}
	busy := float64(sweeps.Load()-n1) / time.Since(start).Seconds()
	t.Logf("sweep tasks posted a second: %.0f awake without traffic, %.0f with; %d ticks seen in the busy second", idle, busy, ticks)
	if busy*2 > idle {
		t.Errorf("%.0f sweep tasks a second posted with traffic, %.0f without: the busy loop does not tick itself", busy, idle)
	}
	if ticks < 20 {
		t.Errorf("the loop's tick moved %d times in a second of traffic: it does not tick", ticks)
	}
	n2 := sweeps.Load()
	// Awake for QuietAfter, then one a rest (IdleTick): ten within 20 s.
	waitUntil(t, 20*time.Second, "the ticker's sweep tasks once the traffic stops", func() bool { return sweeps.Load() >= n2+10 })
}
