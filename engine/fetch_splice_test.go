package engine

// Issue 11.4: the records of Fetch answers below a splice session's bound
// spliced on the loop (fetch_splice.go).

import (
	"testing"
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
		before := fetchSplicedBytes.Load()
		for round := 0; round < n; round++ {
			for _, r := range []*rawConn{fast, slow} {
				for _, v := range []int16{11, 12} {
					r.fetchOrders(v)
					r.checkOrders(v, size)
					answers++
				}
			}
		}
		return answers, fetchSplicedBytes.Load() - before
	}
	sessions, units := spliceRuns.Load(), fetchUnits.Load()
	answers, spliced := rounds(3)
	t.Logf("%d answers of 2 × 512 KiB records: %d KiB spliced on the loop, %d units from the socket", answers, spliced>>10, fetchUnits.Load()-units)
	if spliced < 1<<20 {
		t.Fatalf("%d answers of 2 × 512 KiB records: %d bytes spliced on the loop", answers, spliced)
	}
	if n := spliceRuns.Load() - sessions; n != 0 {
		t.Fatalf("%d splice sessions for partitions below spliceMin", n)
	}

	testPipeShort.Store(true)
	outs := fetchPipeOuts.Load()
	_, spliced = rounds(2)
	testPipeShort.Store(false)
	if fetchPipeOuts.Load() == outs || spliced == 0 {
		t.Fatalf("half of every pass read out: %d passes read out, %d bytes spliced", fetchPipeOuts.Load()-outs, spliced)
	}

	old := fetchSpliceMin.Swap(0)
	t.Cleanup(func() { fetchSpliceMin.Store(old) })
	if _, spliced = rounds(1); spliced != 0 {
		t.Fatalf("splicing off: %d bytes spliced", spliced)
	}
}
