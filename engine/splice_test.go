package engine

// Issue 11.4, 23.2: the records of a large Fetch answer spliced from the
// broker's socket to the client's, on the loop (fetch_splice.go, engine/splice).

import (
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// noSplice turns the splicing of answers off for the test's engine (the
// paths it bypasses).
func noSplice() Option { return WithSpliceMin(0, 64<<10) }

// largeAnswers is a broker answering every Fetch with two partitions of
// size record bytes (the second with aborted transactions), written in
// chunks of 256 KiB.
func largeAnswers(t *testing.T, size int) *fetchBroker {
	return newFetchBroker(t, 256<<10, func(h codec.RequestHeader, req *kmsg.FetchRequest) []byte {
		return respFrame(h.Correlation, streamAnswer(req, size))
	})
}

// Every byte arrives intact, at v11 (the answer ends with records: the
// gateway's last own bytes follow the splice) and v12 (tag sections), to a
// client that reads at once and to one with a small receive window (what
// the gateway had queued for it goes first), and most of the record bytes
// never entered the process.
func TestSpliceLargeFetchIntact(t *testing.T) {
	const size = 3 << 20
	f := largeAnswers(t, size)
	env := newTestEnvWith(t, envConfig{upstream: f.upstream()})
	bytes0 := env.e.env.Series.FetchSpliced.Load()
	fast := dialReader(t, env, "acme-app")
	slow := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"]) // a 16 KiB window
	// How much of an answer is still in the broker's socket when a pass
	// comes is the machine's timing: rounds go on until half the record
	// bytes were spliced (two rounds at least), a bounded number, each
	// answer checked whole.
	answers, moved := 0, int64(0)
	for round := 0; round < 8 && (round < 2 || moved < int64(answers)*size); round++ {
		for _, r := range []*rawConn{fast, slow} {
			for _, v := range []int16{11, 12} {
				r.fetchOrders(v)
				r.checkOrders(v, size)
				answers++
			}
		}
		moved = env.e.env.Series.FetchSpliced.Load() - bytes0
	}
	if moved < int64(answers)*size {
		t.Fatalf("%d answers of 2 × %d record bytes: %d bytes spliced", answers, size, moved)
	}
	t.Logf("%d answers: %d MiB spliced", answers, moved>>20)
}

// A client that stops reading mid-answer: the gateway holds no more than
// one read of its broker (the rest waits in the broker's socket: the pass
// is bounded by the client's room, invariant 42), and the write timeout
// closes it with a reset, as on the path without splice; nothing stays open.
func TestSpliceStalledClient(t *testing.T) {
	const size = 8 << 20
	f := largeAnswers(t, size)
	env := newTestEnvWith(t, envConfig{upstream: f.upstream()}, WithWriteTimeout(2*time.Second))
	fds, pipes := settledFds(t), loopPipes(t, env)
	bytes0 := env.e.env.Series.FetchSpliced.Load()
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	cl := clientOf(t, env.e, r)
	r.fetchOrders(12)
	bound := int64(env.e.opts.ReadBufferCap) + codec.MaxStreamUnit
	var peak int64
	deadline := time.Now().Add(20 * time.Second)
	for {
		var held int64
		var closed bool
		onLoopOf(t, cl, func() {
			closed = cl.State().Gone
			if !closed {
				held = heldBytes(cl)
			}
		})
		peak = max(peak, held)
		if closed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a client that does not read was not closed by the write timeout")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if env.e.env.Series.FetchSpliced.Load() == bytes0 {
		t.Fatal("the answer was not spliced")
	}
	if peak > bound {
		t.Fatalf("the gateway held %d bytes for a client that does not read (bound %d)", peak, bound)
	}
	t.Logf("held at most %d KiB", peak>>10)
	env.waitLog(5*time.Second, "the client does not read its answers")
	_ = r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, r.c); err != nil && os.IsTimeout(err) {
		t.Fatal("the stalled client was not told of the close")
	}
	_ = r.c.Close()
	waitFds(t, fds+2*(loopPipes(t, env)-pipes), "after the stalled client's close") // a loop's pipe is made at its first pass
}

// A client that reads slowly, its socket full at every pass, is not taken
// for one that reads nothing (B3): its answers span more than the write
// timeout and arrive whole; its socket's progress restarts the clock; its
// broker, paused while its socket is full, is spliced from where it waits.
func TestSpliceSlowReaderKept(t *testing.T) {
	const size = 2 << 20
	f := largeAnswers(t, size)
	env := newTestEnvWith(t, envConfig{upstream: f.upstream()}, WithWriteTimeout(2*time.Second))
	rooms0, det0 := env.e.env.Series.FetchRoomOuts.Load(), env.e.env.Series.FetchDetached.Load()
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	r.c = &slowConn{Conn: r.c, chunk: 16 << 10, every: 10 * time.Millisecond} // at most 1.6 MiB/s
	// Whether a pass meets the full socket, rather than gnet's read of the
	// broker taking the records first, depends on the machine's timing:
	// answers go on, each whole, until both are seen (at most 8).
	seen := func() bool {
		return env.e.env.Series.FetchRoomOuts.Load() != rooms0 && env.e.env.Series.FetchDetached.Load() != det0
	}
	start, n := time.Now(), 0
	for _, v := range []int16{11, 12, 11, 12, 11, 12, 11, 12} {
		r.fetchOrders(v)
		r.checkOrders(v, size)
		if n++; n >= 2 && seen() {
			break
		}
	}
	took := time.Since(start)
	if took < 2*time.Second {
		t.Fatalf("the answers took %v: not longer than the write timeout, the test shows nothing", took)
	}
	if env.e.env.Series.FetchRoomOuts.Load() == rooms0 {
		t.Fatalf("no pass ended at the slow reader's full socket in %d answers", n)
	}
	// Its broker, paused meanwhile, is spliced from before it is read again.
	if env.e.env.Series.FetchDetached.Load() == det0 {
		t.Fatalf("no record byte spliced from the paused broker's socket in %d answers", n)
	}
	t.Logf("%d answers of %d record bytes in %v", n, size, took.Round(time.Millisecond))
}

// slowConn reads at most chunk bytes per read, one read every every.
type slowConn struct {
	net.Conn
	chunk int
	every time.Duration
}

func (c *slowConn) Read(b []byte) (int, error) {
	time.Sleep(c.every)
	return c.Conn.Read(b[:min(len(b), c.chunk)])
}

// A client that closes in the middle of a spliced answer: nothing stays open, and another client's answers are whole.
func TestSpliceClientClosesMidAnswer(t *testing.T) {
	const size = 6 << 20
	f := largeAnswers(t, size)
	env := newTestEnvWith(t, envConfig{upstream: f.upstream()})
	other := dialReader(t, env, "acme-app")
	other.fetchOrders(12)
	other.checkOrders(12, size)
	fds, pipes := settledFds(t), loopPipes(t, env)
	for i := 0; i < 3; i++ {
		r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
		cl := clientOf(t, env.e, r)
		before := env.e.env.Series.FetchSpliced.Load()
		r.fetchOrders(12)
		waitUntil(t, 30*time.Second, "records spliced", func() bool { return env.e.env.Series.FetchSpliced.Load() > before })
		buf := make([]byte, 64<<10)
		_, _ = io.ReadFull(r.c, buf) // a part of it
		if i == 1 {
			_ = r.c.(*net.TCPConn).SetLinger(0) // a reset
		}
		_ = r.c.Close()
		clientGone(t, cl)
	}
	waitFds(t, fds+2*(loopPipes(t, env)-pipes), "after three clients closed mid-answer")
	other.fetchOrders(11)
	other.checkOrders(11, size)
}
