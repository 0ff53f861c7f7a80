// TestTwoReplicasWithinASync and its steps: two replicas spending at once
// against one Redis, their totals checked against what was spent, counted
// in reconciliations.

package counters

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/flexway/flexway/quota"
)

// Two replicas spending at once: each one's total is never above what both
// spent, and never below what both had spent before their last two rounds
// of reconciliations (B's count reaches Redis at a sync of B's, A reads it
// at a sync of A's begun after). Counted in reconciliations, not in time.
func TestTwoReplicasWithinASync(t *testing.T) {
	srv := testkit.StartRedis(t)
	const every = 100 * time.Millisecond
	clocks := []*syncClock{{}, {}}
	a := openT(t, srv.URL(), every, nil, clocks[0].now)
	b := openT(t, srv.URL(), every, nil, clocks[1].now)
	ca, cb := a.Counter("acme", quota.Month), b.Counter("acme", quota.Month)
	var spent atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range []quota.Counter{ca, cb} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spendUntil(stop, c, &spent)
		}()
	}
	checked := checkWithinASync(t, clocks, ca, cb, &spent)
	if checked < 10 {
		t.Fatalf("only %d samples checked", checked)
	}
	close(stop)
	wg.Wait()
	total := spent.Load()
	settled(t, clocks...)
	if ta, tb := ca.Total(time.Now()), cb.Total(time.Now()); ta != total || tb != total {
		t.Fatalf("once the spending stopped and both reconciled: %d, %d, want %d", ta, tb, total)
	}
}

// spendUntil adds 1 to c every millisecond or so until stop closes.
func spendUntil(stop <-chan struct{}, c quota.Counter, spent *atomic.Int64) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		// spent is raised before the Add: a total is never above it.
		spent.Add(1)
		c.Add(time.Now(), 1)
		time.Sleep(time.Millisecond)
	}
}

// syncSample is what was spent, and the reconciliations after which both
// totals hold it: first each replica's spending written (written set),
// then each replica's read begun after that (read set).
type syncSample struct {
	spent   int64
	written []int64
	read    []int64
}

// checkWithinASync samples the spending for two seconds, and until ten
// samples are checked (a minute at most): at each round both totals are
// at most what was spent, and at least each sample whose two rounds of
// reconciliations are over. It returns the number of samples checked.
func checkWithinASync(t *testing.T, clocks []*syncClock, ca, cb quota.Counter, spent *atomic.Int64) int {
	var open []syncSample
	checked := 0
	end := time.Now().Add(2 * time.Second)
	for time.Now().Before(end) || (len(open) > 0 && checked < 10) {
		if time.Now().After(end.Add(60 * time.Second)) {
			t.Fatalf("the replicas did not reconcile within a minute: %d samples open", len(open))
		}
		if time.Now().Before(end) {
			before := spent.Load() // spent up to now, some not yet Added
			open = append(open, syncSample{spent: before, written: syncCounts(clocks)})
		}
		// Totals read after the counts: a sample whose read set is past
		// was reconciled before these totals.
		var due []int64
		open, due = dueSamples(clocks, open)
		now := time.Now()
		ta, tb := ca.Total(now), cb.Total(now)
		after := spent.Load()
		if ta > after || tb > after {
			t.Fatalf("totals %d, %d above what was spent (%d)", ta, tb, after)
		}
		for _, old := range due {
			checked++
			if ta < old-2 || tb < old-2 { // two Adds may trail their spent.Add
				t.Fatalf("totals %d, %d below the %d spent before two rounds of reconciliations", ta, tb, old)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return checked
}

// dueSamples moves each open sample on: its read set taken once its
// written set is past; due (its spending returned) once its read set is
// past. It returns the samples still open and the spending due.
func dueSamples(clocks []*syncClock, open []syncSample) ([]syncSample, []int64) {
	var due []int64
	keep := open[:0]
	for _, s := range open {
		switch {
		case s.read == nil && syncsPast(clocks, s.written):
			s.read = syncCounts(clocks)
			keep = append(keep, s)
		case s.read != nil && syncsPast(clocks, s.read):
			due = append(due, s.spent)
		default:
			keep = append(keep, s)
		}
	}
	return keep, due
}
