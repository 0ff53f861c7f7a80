// The soak's accounting on made-up runs: a record lost, doubled, unread,
// an aborted transaction seen, one in doubt seen in part, the flatness
// rule on a flat gauge, a leaking one and a falling one, the budget
// counters in Redis against the Produce requests admitted (exact, over by
// a lost answer within the slack, over beyond it, under), what the
// gateway's metrics say it admitted and at what peak rate, and its lines
// on the store against the outages (once; none within the minute of the
// line before; a line outside every outage). Fast: it runs in make test.
package main

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

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

func TestBudgetRows(t *testing.T) {
	tenants := []string{"a", "b", "c", "d"}
	base := map[string]int64{"a": 100, "b": 0, "c": 7, "d": 50}
	admitted := map[string]int64{"a": 40, "b": 40, "c": 40, "d": 40}
	slack := map[string]int64{"a": 3, "b": 3, "c": 3, "d": 3}
	end := map[string]int64{
		"a": 140, // exact
		"b": 43,  // a lost answer: 3 counted twice, within the slack
		"c": 51,  // 4 too many: beyond it
		"d": 89,  // one admitted request never reached Redis
	}
	want := map[string]struct {
		over int64
		ok   bool
	}{"a": {0, true}, "b": {3, true}, "c": {4, false}, "d": {-1, false}}
	for _, r := range budgetRows(tenants, base, end, admitted, slack) {
		if w := want[r.Tenant]; r.over() != w.over || r.ok() != w.ok {
			t.Errorf("%s: %+v: over %d ok %v, want %d %v", r.Tenant, r, r.over(), r.ok(), w.over, w.ok)
		}
	}
}

func TestAdmittedIn(t *testing.T) {
	m := `# HELP flexway_kafka_requests_total requests judged
flexway_kafka_requests_total{cluster="soak",tenant="tenant-01",api="Produce",decision="allowed",cause="none"} 120
flexway_kafka_requests_total{cluster="soak",tenant="tenant-01",api="Produce",decision="throttled",cause="quota"} 3
flexway_kafka_requests_total{cluster="soak",tenant="tenant-01",api="Produce",decision="refused",cause="quota"} 9
flexway_kafka_requests_total{cluster="soak",tenant="tenant-01",api="Fetch",decision="allowed",cause="none"} 800
flexway_kafka_requests_total{cluster="soak",tenant="tenant-010",api="Produce",decision="allowed",cause="none"} 5
flexway_kafka_requests_total{cluster="soak",tenant="tenant-02",api="Produce",decision="allowed",cause="none"} 77
`
	got := admittedIn(m, []string{"tenant-01", "tenant-02", "tenant-03"})
	if got["tenant-01"] != 123 || got["tenant-02"] != 77 || got["tenant-03"] != 0 {
		t.Fatalf("admitted %v, want tenant-01 123 (allowed and throttled Produce), tenant-02 77, tenant-03 0", got)
	}
	if n := sumWhere(m, "flexway_kafka_requests_total{", `decision="refused"`, `cause="quota"`); n != 9 {
		t.Fatalf("refused for a quota: %v, want 9", n)
	}
}

func TestLineTimes(t *testing.T) {
	start := time.Date(2026, 12, 5, 13, 45, 8, 0, time.UTC)
	text := `{"time":"2026-12-05T13:46:07.915184371Z","level":"WARN","msg":"shared counter store unreachable: deciding","store":"x"}
{"time":"2026-12-05T13:46:07.978458292Z","level":"INFO","msg":"shared counter store reachable again: reconciled"}
not json, shared counter store unreachable
{"time":"2026-12-05T13:48:01.5Z","level":"WARN","msg":"shared counter store unreachable: deciding"}`
	got := lineTimes(text, storeDown, start)
	want := []time.Duration{59915184371, 173500 * time.Millisecond}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestJudgeLines(t *testing.T) {
	s := time.Second
	cases := []struct {
		name         string
		downs, backs []time.Duration
		ok           bool
	}{
		{"once, then back", []time.Duration{101 * s}, []time.Duration{112 * s}, true},
		{"twice in one outage", []time.Duration{101 * s, 105 * s}, []time.Duration{112 * s}, false},
		{"never said", nil, nil, false},
		{"down said, never back", []time.Duration{101 * s}, nil, false},
		{"a line 30 s before: none due", []time.Duration{70 * s}, []time.Duration{70 * s}, true},
		{"a line 30 s before, and one more", []time.Duration{70 * s, 101 * s}, []time.Duration{70 * s, 112 * s}, false},
		{"a line 90 s before: one due", []time.Duration{10 * s}, []time.Duration{10 * s}, false},
		{"a line 90 s before, then once", []time.Duration{10 * s, 101 * s}, []time.Duration{10 * s, 111 * s}, true},
		{"back twice", []time.Duration{101 * s}, []time.Duration{105 * s, 111 * s}, false},
	}
	for _, c := range cases {
		l := judgeLines(c.downs, c.backs, 100*s, 112*s)
		if l.ok() != c.ok {
			t.Errorf("%s: %+v: ok %v, want %v", c.name, l, l.ok(), c.ok)
		}
	}
	outs := []outageLines{judgeLines(nil, nil, 100*s, 112*s), judgeLines(nil, nil, 300*s, 320*s)}
	if n := strays([]time.Duration{50 * s, 101 * s, 200 * s, 310 * s, 330 * s}, outs); n != 3 {
		t.Fatalf("%d lines outside the outages, want 3", n)
	}
}

func TestPeakRate(t *testing.T) {
	s := time.Second
	samples := []sample{
		{At: 10 * s, Gateway: 1, Admitted: map[string]int64{"a": 100}},
		{At: 20 * s, Gateway: 1, Admitted: map[string]int64{"a": 400}}, // 30/s
		{At: 30 * s, Gateway: 2, Admitted: map[string]int64{"a": 10}},  // a new gateway: no rate across it
		{At: 40 * s, Gateway: 2, Admitted: map[string]int64{"a": 210}}, // 20/s
	}
	if got := peakRate(samples, []string{"a", "b"}); got["a"] != 30 || got["b"] != 0 {
		t.Fatalf("peak %v, want a 30/s, b 0", got)
	}
}
