//go:build linux && !flexway_portable

package conn

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/engine/kernel"
)

// The one writable signal (invariant 27): the tick asks poll(2) whether a
// socket takes more only where the watcher is not armed for it. A Conn
// armed with bytes queued is left to the watcher even once its socket has
// room (here a watcher that arms and never tells: nothing writes them);
// without a watcher (it could not be made) the tick writes them all.
func TestTickAsksWritabilityOnlyWhereTheWatcherFailed(t *testing.T) {
	s := startServer(t, 1<<30, 1<<30) // marks out of the way
	nc, o := s.accept(t)
	l := o.c.l
	mute, err := kernel.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { go mute.Run(func([]kernel.Event) {}); mute.Stop() }) // Run closes its fds
	onLoop(t, o, func() {
		if l.w != nil {
			l.w.Stop()
		}
		l.w = mute
	})

	// The peer reads nothing: bytes queue, and the Conn is armed.
	chunk := bytes.Repeat([]byte("w"), 64<<10)
	written, queued, armed := 0, 0, false
	for queued == 0 {
		if written > 256<<20 {
			t.Fatal("256 MiB written and nothing queued")
		}
		onLoop(t, o, func() {
			if err := o.c.Write(chunk); err != nil {
				t.Error(err)
			}
			queued, armed = o.c.Queued(), o.c.wfd >= 0
		})
		written += len(chunk)
	}
	if !armed {
		t.Fatal("bytes queued and the Conn not armed at the watcher")
	}

	// The peer reads what the socket sent: the socket has room again.
	var got atomic.Int64
	go func() {
		buf := make([]byte, 1<<20)
		_ = nc.SetReadDeadline(time.Now().Add(wait))
		for got.Load() < int64(written) {
			n, err := nc.Read(buf)
			if err != nil {
				return
			}
			got.Add(int64(n))
		}
	}()
	eventually(t, "the socket's send queue empty", func() bool {
		var unsent int
		onLoop(t, o, func() { unsent = o.c.Unsent() })
		return unsent == 0 && got.Load() == int64(written-queued)
	})
	var before, after int
	onLoop(t, o, func() {
		before = o.c.Queued()
		l.Tick(time.Now().Add(time.Hour)) // its once-a-second look included
		after = o.c.Queued()
	})
	if before != queued || after != before {
		t.Fatalf("armed at the watcher, the socket with room: %d bytes queued, %d before the tick, %d after (the tick wrote them)", queued, before, after)
	}

	// The watcher could not be made: the tick alone writes what waits.
	onLoop(t, o, func() {
		l.disarm(o.c)
		l.w, l.wFailed = nil, true
	})
	eventually(t, "every byte written by the tick", func() bool { return got.Load() == int64(written) })
	var left int
	onLoop(t, o, func() { left = o.c.Queued() })
	if left != 0 || o.drained.Load() == 0 {
		t.Fatalf("%d bytes still queued, Drained %d times", left, o.drained.Load())
	}
}
