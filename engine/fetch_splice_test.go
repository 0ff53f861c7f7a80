package engine

// Issue 11.4: the records of Fetch answers below a splice session's bound
// spliced on the loop (fetch_splice.go).

import (
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/flexway/flexway/engine/session"
)

// Answers of two partitions of 512 KiB records (below spliceMin: no
// session) to a client that reads at once and to one with a small window,
// at v11 (the answer ends with records) and v12 (tag sections): every
// byte arrives intact, and record bytes went from the broker's socket to
// the client's without the loop's buffer. With testPipeShort every pass
// meets a "full" client socket: the pipe's rest is read out and queued
// behind the spliced half, and the answers are intact too. With the bound
// at 0 nothing is spliced.
func TestSpliceFetchOnLoop(t *testing.T) {
	const size = 512 << 10
	f := largeAnswers(t, size)
	env := newTestEnvWith(t, envConfig{upstream: f.upstream()})
	fast := dialReader(t, env, "acme-app")
	slow := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"]) // a 16 KiB window
	rounds := func(n int) (answers int, spliced int64) {
		before := env.e.env.Series.FetchSpliced.Load()
		for round := 0; round < n; round++ {
			for _, r := range []*rawConn{fast, slow} {
				for _, v := range []int16{11, 12} {
					r.fetchOrders(v)
					r.checkOrders(v, size)
					answers++
				}
			}
		}
		return answers, env.e.env.Series.FetchSpliced.Load() - before
	}
	// Whether a pass finds the records still in the broker's socket is the
	// machine's timing (a slow loop may find them read already): rounds go
	// on until the pass is seen, each answer checked whole; a bounded number.
	const most = 12
	series := &env.e.env.Series
	units := series.FetchUnits.Load()
	answers, spliced := 0, int64(0)
	for r := 0; r < most && (r < 3 || spliced < 1<<20); r++ {
		a, s := rounds(1)
		answers, spliced = answers+a, spliced+s
	}
	t.Logf("%d answers of 2 × 512 KiB records: %d KiB spliced on the loop, %d units from the socket", answers, spliced>>10, series.FetchUnits.Load()-units)
	if spliced < 1<<20 {
		t.Fatalf("%d answers of 2 × 512 KiB records: %d bytes spliced on the loop", answers, spliced)
	}

	env.e.env.Tune.PipeShort.Store(true)
	outs := series.FetchPipeOuts.Load()
	spliced = 0
	for r := 0; r < most && (r < 2 || series.FetchPipeOuts.Load() == outs || spliced == 0); r++ {
		_, s := rounds(1)
		spliced += s
	}
	env.e.env.Tune.PipeShort.Store(false)
	if series.FetchPipeOuts.Load() == outs || spliced == 0 {
		t.Fatalf("half of every pass read out: %d passes read out, %d bytes spliced", series.FetchPipeOuts.Load()-outs, spliced)
	}

	old := env.e.env.Tune.FetchSpliceMin.Swap(0)
	t.Cleanup(func() { env.e.env.Tune.FetchSpliceMin.Store(old) })
	if _, spliced = rounds(1); spliced != 0 {
		t.Fatalf("splicing off: %d bytes spliced", spliced)
	}
}

// Clients that close (one with a reset) in the middle of answers spliced
// on the loop: nothing stays open, and the answers of another client
// through the same loop's pipe are whole and intact afterwards (a pass
// left no byte of a closed client's answer in the pipe).
func TestSpliceFetchOnLoopClientCloses(t *testing.T) {
	const size = 768 << 10
	f := largeAnswers(t, size)
	env := newTestEnvWith(t, envConfig{upstream: f.upstream()})
	other := dialReader(t, env, "acme-app")
	other.fetchOrders(12)
	other.checkOrders(12, size)
	fds, pipes := settledFds(t), loopPipes(t, env)
	spliced := env.e.env.Series.FetchSpliced.Load()
	for i := 0; i < 4; i++ {
		r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"]) // a 16 KiB window: the answer waits
		cl := clientOf(t, env.e, r)
		r.fetchOrders(int16(11 + i%2))
		buf := make([]byte, 64<<10)
		if _, err := io.ReadFull(r.c, buf); err != nil { // a part of it
			t.Fatal(err)
		}
		if i%2 == 1 {
			_ = r.c.(*net.TCPConn).SetLinger(0) // a reset
		}
		_ = r.c.Close()
		clientGone(t, cl)
		for _, v := range []int16{11, 12} {
			other.fetchOrders(v)
			other.checkOrders(v, size)
		}
	}
	// A loop's pipe, made at its first pass, stays until the engine stops.
	waitFds(t, fds+2*(loopPipes(t, env)-pipes), "after four clients closed mid-answer")
	if env.e.env.Series.FetchSpliced.Load() == spliced {
		t.Fatal("nothing was spliced on the loop")
	}
}

// loopPipes counts what the loops made at their first use and keep: a
// pipe (two descriptors) and a watcher (two more), read on each loop; the
// descriptors' count is twice it.
func loopPipes(t *testing.T, env *testEnv) int {
	t.Helper()
	var n atomic.Int64
	onLoops(t, env.e, func(l *session.Loop) {
		if l.State().Pipe {
			n.Add(1)
		}
		if l.State().Watching {
			n.Add(1)
		}
	})
	return int(n.Load())
}
