package session

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// heldLoop is a gnet loop that keeps what is posted to it, for the test
// to run.
type heldLoop struct {
	gnet.EventLoop
	posted gnet.Runnable
}

func (h *heldLoop) Execute(_ context.Context, r gnet.Runnable) error {
	h.posted = r
	return nil
}

// Invariant 18 for the tick: the engine's ticker (Engine.OnTick, every
// SweepEvery) reads the loops and posts each its sweep without allocating:
// the loops' list is kept, not copied, and the sweep's task is the loop's
// own (gnet's queueing of it is gnet's).
func TestTickerAllocatesNothing(t *testing.T) {
	env := NewEnv(slog.New(slog.DiscardHandler))
	el := &heldLoop{}
	l := env.loopOf(el)
	l.lastFull = time.Now().Add(time.Hour) // the pass over the clients once a second is not this test's
	tick := func() {
		for _, l := range env.Loops() {
			l.ticked.Store(0) // due
			l.PostTick()
		}
		if el.posted == nil {
			t.Fatal("a due tick was not posted")
		}
		_ = el.posted.Run(context.Background())
		el.posted = nil
	}
	tick()
	if since := time.Since(l.Ticked()); since < 0 || since > time.Minute {
		t.Fatalf("the posted sweep did not tick the loop (last %v ago)", since)
	}
	if n := testing.AllocsPerRun(200, tick); n != 0 {
		t.Errorf("%v allocations per tick", n)
	}
	if l.tickPosted.Load() {
		t.Error("the tick ran and still counts as posted: the next would not be")
	}
	if got := env.Loops(); len(got) != 1 || got[0] != l || env.loopOf(el) != l {
		t.Errorf("loops %v, want the one made", got)
	}
}
