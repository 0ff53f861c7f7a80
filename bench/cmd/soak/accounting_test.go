// The soak's accounting on made-up runs: a record lost, doubled, unread,
// an aborted transaction seen, one in doubt seen in part, and the
// flatness rule on a flat gauge, a leaking one and a falling one. Fast: it
// runs in make test.
package main

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestValueRoundTrip(t *testing.T) {
	id := recordID(7, 123456)
	v := value(id, 100)
	if got, ok := idOf(v); !ok || got != id || len(v) != 100 {
		t.Fatalf("value %x: id %x, %v, %d bytes", id, got, ok, len(v))
	}
	if _, ok := idOf([]byte("short")); ok {
		t.Fatal("a 5-byte value read as an id")
	}
}

func TestCountEvents(t *testing.T) {
	acked := map[uint64]bool{1: true, 2: true, 3: true, 4: true}
	onBroker := map[uint64]int{1: 1, 2: 2, 3: 1, 9: 1} // 4 lost, 2 twice, 9 never acknowledged
	read := map[uint64]int{1: 3, 2: 1}                 // 3 unread; 1 read thrice (a group's redelivery)
	got := countEvents(acked, onBroker, read)
	want := tally{Acked: 4, OnBroker: 3, Read: 2, Lost: 1, Dup: 1, Unread: 1, Extra: 1}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if !got.failed() {
		t.Fatal("a run with a record lost passes")
	}
	clean := countEvents(map[uint64]bool{1: true}, map[uint64]int{1: 1, 5: 1}, map[uint64]int{1: 2})
	if clean.failed() || clean.Extra != 1 {
		t.Fatalf("a clean run (a record given up on but written, one read twice): %+v", clean)
	}
}

func TestCountTxns(t *testing.T) {
	k := func(n uint64) uint64 { return recordID(3, n<<8) >> 8 }
	rec := func(n, i uint64) uint64 { return recordID(3, n<<8|i) }
	txns := map[uint64]outcome{k(1): committed, k(2): aborted, k(3): inDoubt, k(4): inDoubt, k(5): committed}
	size := map[uint64]int{k(1): 2, k(2): 2, k(3): 2, k(4): 2, k(5): 2}
	onBroker := map[uint64]int{
		rec(1, 0): 1, rec(1, 1): 1, // committed, whole
		rec(3, 0): 1, rec(3, 1): 1, // in doubt, whole: committed after all
		rec(4, 0): 1, // in doubt, in part: torn
		rec(5, 0): 1, rec(5, 1): 1,
	}
	read := map[uint64]int{rec(1, 0): 1, rec(1, 1): 1, rec(5, 0): 1, rec(5, 1): 1}
	got := countTxns(txns, size, onBroker, read)
	if got.Committed != 2 || got.Aborted != 1 || got.InDoubt != 2 || got.Torn != 1 || got.AbortedSeen != 0 ||
		got.Acked != 4 || got.Lost != 0 || got.Dup != 0 || got.Unread != 0 || got.Extra != 3 {
		t.Fatalf("got %+v", got)
	}
	if !got.failed() {
		t.Fatal("a torn transaction passes")
	}
	onBroker[rec(2, 1)] = 1
	delete(onBroker, rec(4, 0))
	got = countTxns(txns, size, onBroker, read)
	if got.AbortedSeen != 1 || got.Torn != 0 || !got.failed() {
		t.Fatalf("an aborted transaction's record seen: %+v", got)
	}
	delete(onBroker, rec(2, 1))
	if got = countTxns(txns, size, onBroker, read); got.failed() {
		t.Fatalf("a clean ledger fails: %+v", got)
	}
}

func TestFlatness(t *testing.T) {
	rule := flatRule{Ratio: 1.2, Slack: 10}
	series := func(f func(i int) float64) []float64 {
		s := make([]float64, 40)
		for i := range s {
			s[i] = f(i)
		}
		return s
	}
	cases := []struct {
		name string
		s    []float64
		ok   bool
	}{
		{"flat with noise and a spike", series(func(i int) float64 { return 100 + float64(i%3) + float64(i/39)*500 }), true},
		{"warm-up then flat", series(func(i int) float64 { return min(float64(i)*20, 100) }), true},
		{"leaking", series(func(i int) float64 { return 100 + float64(i)*5 }), false},
		{"falling", series(func(i int) float64 { return 200 - float64(i) }), true},
	}
	for _, c := range cases {
		q2, q4, ok := rule.flatness(c.s)
		if ok != c.ok {
			t.Errorf("%s: Q2 median %.0f, Q4 median %.0f: flat %v, want %v", c.name, q2, q4, ok, c.ok)
		}
	}
	if _, _, ok := rule.flatness([]float64{1, 2, 3}); ok {
		t.Error("three samples judged flat")
	}
}

func TestErrKind(t *testing.T) {
	for err, want := range map[error]string{
		kerr.NotLeaderForPartition:                        "NOT_LEADER_FOR_PARTITION",
		fmt.Errorf("write: %w", syscall.ECONNRESET):       "connection reset",
		context.DeadlineExceeded:                          "context deadline exceeded",
		fmt.Errorf("dial 127.0.0.1:20001: no route at 3"): "dial ...:: no route at ",
	} {
		if got := errKind(err); got != want {
			t.Errorf("%v: %q, want %q", err, got, want)
		}
	}
}
