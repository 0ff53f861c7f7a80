// The soak's accounting, apart from any client or process so that a unit
// test holds it: record ids, the tally of what was acknowledged against
// what the broker holds and the groups read (lost, duplicated, unread),
// the transactions' outcomes against what a read_committed reader sees,
// the flatness rule on the gateway's gauges, and the kinds of errors.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"

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
