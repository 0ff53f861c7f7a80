//go:build linux && !flexway_portable

package kernel

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A socket armed while full fires once its peer reads, with the arming's
// generation; Stop ends Run.
func TestWatcherFiresWhenTheSocketTakesMore(t *testing.T) {
	_, peer, fd, _ := tcpPair(t)
	w, err := NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan Event, 16)
	ran := make(chan struct{})
	go func() {
		w.Run(func(evs []Event) {
			for _, e := range evs {
				got <- e
			}
		})
		close(ran)
	}()
	var q Queue
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for q.Len() == 0 {
		q.Push(chunk)
		if _, err := q.WriteTo(fd); err != nil {
			t.Fatal(err)
		}
	}
	gen, err := w.Arm(fd)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-got:
		t.Fatalf("fired (%v) while the socket was full", e)
	default:
	}
	buf := make([]byte, 1<<20)
	go func() {
		for {
			if _, err := peer.Read(buf); err != nil {
				return
			}
		}
	}()
	select {
	case e := <-got:
		if e.Fd != int32(fd) || e.Gen != gen {
			t.Fatalf("event %+v, want fd %d gen %d", e, fd, gen)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no event once the peer read")
	}
	w.Stop()
	select {
	case <-ran:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after Stop")
	}
	q.Reset()
}

// The watcher waits in Go's poller ("IO wait"), not in a system call: a
// goroutine blocked in epoll_wait holds a P, and with the loop's own
// epoll_wait holding the other, sysmon wakes every 20 µs to take them
// back (invariant 37).
func TestWatcherWaitsInGoPoller(t *testing.T) {
	w, err := NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	go func() {
		w.Run(func([]Event) {})
		close(ran)
	}()
	t.Cleanup(func() { w.Stop(); <-ran })
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := watcherStack()
		if strings.Contains(st, "[IO wait]") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watcher never waited in Go's poller:\n%s", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// watcherStack is the stack of the goroutine running Watcher.Run, its
// state in its first line.
func watcherStack() string {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "kernel.(*Watcher).Run") {
			return g
		}
	}
	return ""
}
