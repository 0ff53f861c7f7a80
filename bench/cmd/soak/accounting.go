// The soak's accounting, apart from any client or process so that a unit
// test holds it: record ids, the tally of what was acknowledged against
// what the broker holds and the groups read (lost, duplicated, unread),
// the transactions' outcomes against what a read_committed reader sees,
// the tenants' budget counters in Redis against the Produce requests the
// gateway admitted, the gateway's lines on its counter store against
// Redis's outages, the bound on the clients' errors during an outage,
// the flatness rule on the gateway's gauges, and the kinds of errors.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A record's id: its tenant's index in the top 8 bits, then a number the
// tenant's writer never uses twice (an event's sequence; a transaction's
// number << 8 | the record's index in it). sentinel marks the end of a
// partition for the final read, never a workload record.
const sentinel = ^uint64(0)

func recordID(tenant int, n uint64) uint64 { return uint64(tenant)<<56 | n }

// txnOf is the transaction (tenant and number) of a ledger record's id.
func txnOf(id uint64) uint64 { return id >> 8 }

// value is id's record value: its 8 bytes, padded to size.
func value(id uint64, size int) []byte {
	v := make([]byte, max(size, 8))
	binary.BigEndian.PutUint64(v, id)
	for i := 8; i < len(v); i++ {
		v[i] = '.'
	}
	return v
}

func idOf(v []byte) (uint64, bool) {
	if len(v) < 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(v), true
}

// tally is the comparison of one kind of record (events, or committed
// transactions' records) across the three places that count them.
type tally struct {
	Acked    int // acknowledged to the writer (events) or committed (ledger)
	OnBroker int // distinct acknowledged records the broker holds
	Read     int // distinct acknowledged records the groups read
	Lost     int // acknowledged, not on the broker
	Dup      int // records the broker holds more than once
	Unread   int // acknowledged and on the broker, never read by the groups
	Extra    int // on the broker, never acknowledged (the writer gave up on them, or their outcome is unknown)
}

// countEvents tallies the events: acked by the producer, onBroker as often
// as the broker holds each, read by the groups.
func countEvents(acked map[uint64]bool, onBroker, read map[uint64]int) tally {
	t := tally{Acked: len(acked)}
	for id := range acked {
		switch {
		case onBroker[id] == 0:
			t.Lost++
		case read[id] == 0:
			t.Unread++
		}
		if onBroker[id] > 0 {
			t.OnBroker++
		}
		if read[id] > 0 {
			t.Read++
		}
	}
	for id, n := range onBroker {
		if n > 1 {
			t.Dup++
		}
		if !acked[id] {
			t.Extra++
		}
	}
	return t
}

// The outcome of a transaction as its producer knows it.
type outcome uint8

const (
	committed outcome = iota + 1 // EndTransaction(commit) succeeded
	aborted                      // EndTransaction(abort) succeeded
	inDoubt                      // the commit or abort failed: either may have happened
)

// txnTally adds to a tally of committed records the faults of atomicity.
type txnTally struct {
	tally
	Txns, Committed, Aborted, InDoubt int
	AbortedSeen                       int // records of an aborted transaction a read_committed reader saw
	Torn                              int // transactions in doubt that a reader saw in part
}

// countTxns tallies the ledger: txns holds each transaction's outcome and
// size (records), onBroker what a read_committed reader of the broker saw,
// read what the groups (read_committed) read.
func countTxns(txns map[uint64]outcome, size map[uint64]int, onBroker, read map[uint64]int) txnTally {
	acked := map[uint64]bool{}
	seen := map[uint64]int{} // by transaction: its distinct records seen
	for id := range onBroker {
		seen[txnOf(id)]++
	}
	var t txnTally
	for txn, o := range txns {
		t.Txns++
		switch o {
		case committed:
			t.Committed++
			for i := range size[txn] {
				acked[txn<<8|uint64(i)] = true
			}
		case aborted:
			t.Aborted++
			t.AbortedSeen += seen[txn]
		case inDoubt:
			t.InDoubt++
			if seen[txn] != 0 && seen[txn] != size[txn] {
				t.Torn++
			}
		}
	}
	t.tally = countEvents(acked, onBroker, read)
	return t
}

// failed is true when t shows a record lost or doubled, or a transaction
// whose atomicity broke; unread records fail too (the groups must read
// every record acknowledged).
func (t txnTally) failed() bool { return t.tally.failed() || t.AbortedSeen > 0 || t.Torn > 0 }

func (t tally) failed() bool { return t.Lost > 0 || t.Dup > 0 || t.Unread > 0 }

// The flatness rule on a gauge sampled through the run: the median of the
// last quarter of the samples at most ratio times the median of the
// second quarter, plus slack (the first quarter is the warm-up; a gauge
// that falls passes: the rule looks for growth, a leak).
type flatRule struct {
	Ratio, Slack float64
}

// flatness is the rule's verdict on samples (in order of time).
func (r flatRule) flatness(samples []float64) (q2, q4 float64, ok bool) {
	n := len(samples)
	if n < 4 {
		return 0, 0, false // too short a run to judge
	}
	q2 = median(samples[n/4 : n/2])
	q4 = median(samples[n-n/4:])
	return q2, q4, q4 <= q2*r.Ratio+r.Slack
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// errKind names err's kind for the report's table of errors: a Kafka
// error code by its name, a network failure by its cause, anything else by
// its text without its numbers (addresses, ports, sizes).
func errKind(err error) string {
	var ke *kerr.Error
	var ne net.Error
	switch {
	case errors.As(err, &ke):
		return ke.Message
	case errors.Is(err, kgo.ErrClientClosed):
		return "client closed"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "context " + strings.TrimPrefix(err.Error(), "context ")
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.EPIPE):
		return "broken pipe"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "EOF"
	case errors.Is(err, net.ErrClosed):
		return "use of closed connection"
	case errors.As(err, &ne) && ne.Timeout():
		return "i/o timeout"
	}
	s := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, err.Error())
	if len(s) > 70 {
		s = s[:70]
	}
	return s
}

// sumWhere sums the series of the metrics text m whose line starts with
// prefix and holds every one of parts.
func sumWhere(m, prefix string, parts ...string) float64 {
	var n float64
	for _, l := range strings.Split(m, "\n") {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		i := strings.LastIndexByte(l, ' ')
		if v, err := strconv.ParseFloat(l[i+1:], 64); all && err == nil {
			n += v
		}
	}
	return n
}

// admittedIn is, by tenant, the Produce requests the metrics text m counts
// as let through: allowed or throttled (both forwarded, both counted once
// in the tenant's budget).
func admittedIn(m string, tenants []string) map[string]int64 {
	out := map[string]int64{}
	for _, t := range tenants {
		for _, d := range []string{"allowed", "throttled"} {
			out[t] += int64(sumWhere(m, `flexway_kafka_requests_total{cluster="soak",tenant="`+t+`",api="Produce",decision="`+d+`"`))
		}
	}
	return out
}

// budgetRow is a tenant's budget counter (day, or month) in Redis against
// what the gateway admitted: Redis held Base when the gateway started, End
// at the end; the gateway admitted Admitted Produce requests meanwhile.
// A sync whose answer was lost when Redis was killed was applied and is
// sent again (DESIGN.md, invariant 22: a lost answer over-counts), so
// Redis may hold more than admitted, by Slack at most: what the gateway
// admitted in the two syncs before the kill (the delta of the round in
// flight). Never less: every admitted request reaches Redis once it is back.
type budgetRow struct {
	Tenant                     string
	Base, End, Admitted, Slack int64
}

// over is how many more Redis counted than the gateway admitted.
func (r budgetRow) over() int64 { return r.End - r.Base - r.Admitted }

func (r budgetRow) ok() bool { return r.over() >= 0 && r.over() <= r.Slack }

// budgetRows compares, tenant by tenant, one window's counters.
func budgetRows(tenants []string, base, end, admitted, slack map[string]int64) []budgetRow {
	var rows []budgetRow
	for _, t := range tenants {
		rows = append(rows, budgetRow{Tenant: t, Base: base[t], End: end[t], Admitted: admitted[t], Slack: slack[t]})
	}
	return rows
}

// The bound on the clients' errors while Redis is down: the workload's
// churn makes some errors all along (a cut connection, a client
// restarted: about one a second in the first soak), so an outage may see
// up to twice the errors of as long a time just before it, plus
// errorNoise; more is a jump Redis caused (a Produce held on the store, a
// refusal).
const errorNoise = 20

func errorBound(before int) int { return 2*before + errorNoise }

// lineTimes is when (since start) each line of the JSON log text holding s
// was written (its "time" field).
func lineTimes(text, s string, start time.Time) []time.Duration {
	var out []time.Duration
	for _, l := range strings.Split(text, "\n") {
		if !strings.Contains(l, s) {
			continue
		}
		_, after, ok := strings.Cut(l, `"time":"`)
		v, _, ok2 := strings.Cut(after, `"`)
		if t, err := time.Parse(time.RFC3339Nano, v); ok && ok2 && err == nil {
			out = append(out, t.Sub(start))
		}
	}
	return out
}

// downLogEvery is quota/counters' bound on its unreachable line: a line a
// minute at most, whatever the store does.
const downLogEvery = time.Minute

// outageLines is what the gateway wrote of one Redis outage, from the kill
// (From) to its reachable-again line (To; or two syncs after Redis was
// back, when no unreachable line was due).
type outageLines struct {
	From, To   time.Duration
	Down, Back int           // unreachable lines from From to To, reachable-again lines up to a second after
	SinceDown  time.Duration // since the last unreachable line before From; -1: none
}

// judgeLines counts the lines of the outage from..to in downs and backs.
func judgeLines(downs, backs []time.Duration, from, to time.Duration) outageLines {
	o := outageLines{From: from, To: to, SinceDown: -1}
	for _, d := range downs {
		if d >= from && d <= to {
			o.Down++
		} else if d < from {
			o.SinceDown = from - d
		}
	}
	for _, b := range backs {
		if b >= from && b <= to+time.Second {
			o.Back++
		}
	}
	return o
}

// ok: the unreachable line once, unless one was written less than a
// minute before (the bound: none then; near the minute, either), and the
// reachable-again line once when the outage said it was down (or one
// before it, unresolved, did).
func (o outageLines) ok() bool {
	var downOK bool
	switch {
	case o.SinceDown < 0 || o.SinceDown > downLogEvery+3*time.Second:
		downOK = o.Down == 1
	case o.SinceDown < downLogEvery-3*time.Second:
		downOK = o.Down == 0
	default:
		downOK = o.Down <= 1
	}
	return downOK && o.Back <= 1 && o.Back >= o.Down
}

// strays are the unreachable lines outside every outage: the store timed
// out while Redis ran (a loaded machine: quota/counters waits 1 s).
func strays(downs []time.Duration, outages []outageLines) int {
	n := 0
	for _, d := range downs {
		in := false
		for _, o := range outages {
			in = in || (d >= o.From && d <= o.To)
		}
		if !in {
			n++
		}
	}
	return n
}

// peakRate is the highest rate, by tenant, at which the gateway admitted
// Produce requests between two samples of the same gateway.
func peakRate(samples []sample, tenants []string) map[string]float64 {
	out := map[string]float64{}
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		if a.Gateway != b.Gateway || b.At <= a.At {
			continue
		}
		for _, t := range tenants {
			out[t] = max(out[t], float64(b.Admitted[t]-a.Admitted[t])/(b.At-a.At).Seconds())
		}
	}
	return out
}
