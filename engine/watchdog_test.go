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

func TestWatchdogPingsOnlyWhileEveryLoopTicks(t *testing.T) {
	env := newTestEnv(t, "")
	got := fakeNotifySocket(t)
	t.Setenv("WATCHDOG_USEC", "2000000") // WatchdogSec=2s: pings each second while the loops answer within one
	every, err := daemon.SdWatchdogEnabled(false)
	if err != nil || every != 2*time.Second {
		t.Fatalf("WATCHDOG_USEC read as %v (%v)", every, err)
	}
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	servedOrders(t, r)
	target := clientOf(t, env.e, r).Loop()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		env.e.Watchdog(ctx, every, func() { _, _ = daemon.SdNotify(false, daemon.SdNotifyWatchdog) })
	}()
	t.Cleanup(func() { cancel(); <-done })
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
