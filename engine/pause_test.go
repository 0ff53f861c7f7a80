package engine

// Issue 11.2, a client connection paused: its bytes wait in the kernel, a
// thousand pauses leave nothing behind, a peer that closes while paused is
// released, answers still reach it, and a pause asked inside its own
// OnTraffic keeps what gnet had read.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/engine/session"

	"github.com/flexway/flexway/engine/conn"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Issue 11.2: a paused connection's bytes wait in the kernel. A producer is
// paused mid-stream (half a request already read by the gateway), then
// writes 64 MiB: its writes block once the socket buffers are full, the
// gateway's heap and RSS stay where they were; after the resume every
// record arrives, in order, through the normal request path.
func TestPauseBytesWaitInKernel(t *testing.T) {
	const (
		frames   = 1024
		recs     = 16
		size     = 4096
		before   = 32 // whole requests sent before the pause
		minBlock = 8 << 20
	)
	env := newTestEnv(t, "")
	// The half request must stay in gnet's buffer: not streamed (invariant 26).
	env.e.env.Tune.StreamMin.Store(math.MaxInt64)
	addr := leaderOf0(t, env)
	r := dialRaw(t, addr, "acme-app", env.keys["acme-app"])
	defer r.c.Close()
	cl := clientOf(t, env.e, r)
	gauge := env.e.env.Signals.Connections()

	pr := startRawProducer(r.c, 1, frames, recs, size, before)
	answered := make(chan error, 1)
	go func() { answered <- readProduceAnswers(r.c, 1, frames) }()

	h := <-pr.half
	p := pauseAtHalf(t, cl, h)
	heap0, rss0 := memNow(t)
	atPause := pr.written.Load()
	close(pr.gate)

	whilePaused := pr.blocked(t, "the producer wrote everything while paused") - atPause
	heap1, rss1 := memNow(t)
	total := int64(len(appendProduce(nil, 1, 0, recs, size))) * frames
	t.Logf("while paused the peer wrote %.1f MiB of %.1f MiB, then blocked; heap in use %+.2f MiB, RSS %+.2f MiB",
		float64(whilePaused)/(1<<20), float64(total-atPause)/(1<<20), float64(heap1-heap0)/(1<<20), float64(rss1-rss0)/(1<<20))
	if whilePaused > total-atPause-minBlock {
		t.Fatalf("the peer wrote %d of %d bytes while paused", whilePaused, total-atPause)
	}
	if heap1-heap0 > 4<<20 || rss1-rss0 > 8<<20 {
		t.Fatalf("the gateway grew while paused: heap %+d, RSS %+d bytes", heap1-heap0, rss1-rss0)
	}
	var stash int
	onLoopOf(t, cl, func() { stash = p.Stashed() })
	if stash != h || !p.Paused() {
		t.Fatalf("read while paused: stash %d (want %d), paused %v", stash, h, p.Paused())
	}
	if g := env.e.env.Signals.Connections(); g != gauge {
		t.Fatalf("connections gauge %d, was %d", g, gauge)
	}
	noCloseLine(t, env)

	resumeClient(t, cl, p)
	select {
	case err := <-pr.wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(120 * time.Second):
		t.Fatal("the producer never finished after the resume")
	}
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	noCloseLine(t, env)
	wantNumberedOrders(t, env, frames*recs, size)
}

// pauseAtHalf pauses cl once the gateway has read the half request of h
// bytes (and answered the whole ones: the pause waits for its writes to be
// flushed), and checks that the pause stashed those h bytes.
func pauseAtHalf(t *testing.T, cl *session.Client, h int) *conn.Conn {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var in int
		onLoopOf(t, cl, func() { in = cl.Conn().Buffered() })
		if in == h {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway holds %d bytes, want the half request's %d", in, h)
		}
		time.Sleep(time.Millisecond)
	}
	p := pauseClient(t, cl)
	var stash int
	onLoopOf(t, cl, func() { stash = p.Stashed() })
	if stash != h {
		t.Fatalf("stash of %d bytes, want %d", stash, h)
	}
	return p
}

// wantNumberedOrders checks that acme's orders/0 on the broker holds n
// records of size bytes, numbered from 0 in order (appendProduce's).
func wantNumberedOrders(t *testing.T, env *testEnv, n, size int) {
	t.Helper()
	cons := env.directClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		env.phys("acme", "orders"): {0: kgo.NewOffset().AtStart()},
	}))
	next := 0
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for next < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records on the broker", next, n)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if want := fmt.Sprintf("%08d", next); len(rec.Value) != size || string(rec.Value[:8]) != want {
				t.Fatalf("record %d: %q", next, rec.Value[:8])
			}
			next++
		})
	}
}

// Issue 11.2: pause and resume 1000 times, each time with a request sent
// while paused and answered after the resume: no descriptor, no memory and
// no goroutine left behind; the connection was never counted as closed.
func TestPauseResumeThousandTimes(t *testing.T) {
	env := newTestEnv(t, "")
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	cl := clientOf(t, env.e, r)
	defer r.c.Close() // kept: its finalizer would close it
	gauge := env.e.env.Signals.Connections()
	fds := settledFds(t)
	heap0, _ := memNow(t)
	g0 := runtime.NumGoroutine()
	var p *conn.Conn
	for i := 0; i < 1000; i++ {
		if i == 0 {
			p = pauseClient(t, cl)
		} else {
			onLoopOf(t, cl, func() { cl.Conn().Pause(conn.Held) })
			waitState(t, cl, p, rpPaused)
		}
		r.apiVersions() // waits in the kernel
		resumeClient(t, cl, p)
		r.apiVersionsAnswer()
	}
	waitFds(t, fds, "after 1000 pauses")
	heap1, _ := memNow(t)
	if heap1-heap0 > 1<<20 {
		t.Fatalf("heap in use grew by %d bytes over 1000 pauses", heap1-heap0)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > g0+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > g0+2 {
		t.Fatalf("%d goroutines, %d before", g, g0)
	}
	if g := env.e.env.Signals.Connections(); g != gauge {
		t.Fatalf("connections gauge %d, was %d", g, gauge)
	}
	noCloseLine(t, env)
	t.Logf("heap in use %+d bytes after 1000 pauses", heap1-heap0)
}

// Issue 11.2: a peer that closes while paused is noticed, by the check
// the tick makes once a second or at the resume; the socket is closed
// once, the client released and counted once.
func TestPausedPeerCloses(t *testing.T) {
	env := newTestEnv(t, "")
	fds := settledFds(t)
	gauge := env.e.env.Signals.Connections()
	for _, atResume := range []bool{false, true} {
		r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
		cl := clientOf(t, env.e, r)
		p := pauseClient(t, cl)
		r.apiVersions()
		_ = r.c.Close()
		if atResume {
			onLoopOf(t, cl, resume(p))
		}
		clientGone(t, cl)
		var st pauseState
		onLoopOf(t, cl, func() { st = stateOf(p) })
		if st != rpClosed {
			t.Fatalf("pause state %d after the peer's close", st)
		}
		waitFds(t, fds, "after the peer's close")
		if g := env.e.env.Signals.Connections(); g != gauge {
			t.Fatalf("connections gauge %d, want %d", g, gauge)
		}
	}
}

// Issue 11.2: writes go on while a connection is paused. A Fetch the
// broker holds for its wait is answered while the client is paused: the
// answer reaches the client.
func TestPausedConnectionStillWritten(t *testing.T) {
	env := newTestEnv(t, "")
	r := dialRaw(t, leaderOf0(t, env), "acme-app", env.keys["acme-app"])
	defer r.c.Close()
	cl := clientOf(t, env.e, r)
	r.send(emptyFetch(800))
	deadline := time.Now().Add(10 * time.Second)
	for {
		var queued int
		onLoopOf(t, cl, func() { queued = cl.State().Requests })
		if queued == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Fetch was not forwarded")
		}
		time.Sleep(time.Millisecond)
	}
	p := pauseClient(t, cl)
	resp := kmsg.FetchResponse{Version: 11}
	r.recv(&resp)
	if !p.Paused() {
		t.Fatal("resumed before the answer")
	}
	var st pauseState
	onLoopOf(t, cl, func() { st = stateOf(p) })
	if st != rpPaused {
		t.Fatalf("pause state %d while answered", st)
	}
	resumeClient(t, cl, p)
	r.apiVersions()
	r.apiVersionsAnswer()
}

// Issue 11.2: a connection paused inside its own OnTraffic (as a budget
// will): gnet's read of that event is kept (the stash), the frames it held
// are still the owner's to handle, and nothing more is read until the resume.
func TestPauseInsideOwnTraffic(t *testing.T) {
	var arm atomic.Pointer[session.Client]
	hook := func(cl *session.Client) {
		if arm.CompareAndSwap(cl, nil) {
			cl.Conn().Pause(conn.Held)
		}
	}
	env := newTestEnv(t, "")
	env.e.env.Hooks.Traffic.Store(&hook)
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	defer r.c.Close()
	cl := clientOf(t, env.e, r)
	arm.Store(cl)
	r.apiVersions() // read by gnet, paused at once, then handled from the stash
	r.apiVersionsAnswer()
	var p *conn.Conn
	onLoopOf(t, cl, func() { p = cl.Conn() })
	if p == nil {
		t.Fatal("not paused")
	}
	waitState(t, cl, p, rpPaused)
	r.apiVersions() // waits in the kernel
	_ = r.c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var one [1]byte
	if _, err := r.c.Read(one[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("answered while paused (%v)", err)
	}
	resumeClient(t, cl, p)
	r.apiVersionsAnswer()
}
