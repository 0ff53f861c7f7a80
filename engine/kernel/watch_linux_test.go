//go:build linux

package kernel

import (
	"bytes"
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
