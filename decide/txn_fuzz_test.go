// The transaction family's and DescribeCluster's seeds for
// FuzzSessionRequest and the invariants of their forwarded requests.

package decide

import (
	"strings"
	"testing"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnFuzzSeeds are request frames of the transaction family and
// DescribeCluster for FuzzSessionRequest's corpus (servedSeeds), and
// checkTxnForwarded the invariants of their forwarded requests
// (checkRequest's type switch). The fuzz target itself lives in
// fuzz_test.go.
func txnFuzzSeeds() [][]byte {
	var out [][]byte
	add := func(r kmsg.Request) { out = append(out, reqFrame(r, 7, "app-1")) }
	for v := int16(0); v <= 5; v++ {
		add(apRequest(v, "tx-1", seedTopics...))
		add(apRequest(v, "tx-1", "orders"))
		add(tocRequest(v, "tx-1", "billing", seedTopics...))
		add(tocRequest(v, "tx-1", "billing", "orders", "audit"))
		e := kmsg.NewPtrEndTxnRequest()
		e.Version, e.TransactionalID, e.Commit = v, "tx-1", v%2 == 0
		add(e)
	}
	for v := int16(0); v <= 4; v++ {
		a := kmsg.NewPtrAddOffsetsToTxnRequest()
		a.Version, a.TransactionalID, a.Group = v, "tx-1", "billing"
		add(a)
	}
	for v := int16(0); v <= 2; v++ {
		for _, ep := range []int8{1, 2} {
			d := kmsg.NewPtrDescribeClusterRequest()
			d.Version, d.IncludeClusterAuthorizedOperations, d.EndpointType = v, true, ep
			add(d)
		}
	}
	return out
}

// checkTxnForwarded checks a forwarded request of the transaction family or
// DescribeCluster; false for another type.
func checkTxnForwarded(t *testing.T, s *Session, req kmsg.Request) bool {
	t.Helper()
	txn := func(id string) {
		if !strings.HasPrefix(id, "acme.~t.") || !s.View.Transactions {
			t.Fatalf("transactional id %q forwarded (transactions %v)", id, s.View.Transactions)
		}
	}
	group := func(id string) {
		if !strings.HasPrefix(id, "acme.~g.") || !s.View.CanReceive {
			t.Fatalf("group %q forwarded (receive %v)", id, s.View.CanReceive)
		}
	}
	switch r := req.(type) {
	case *kmsg.AddPartitionsToTxnRequest:
		if r.Version < 4 {
			txn(r.TransactionalID)
			for _, tp := range r.Topics {
				if tp.Topic != "acme.orders" {
					t.Fatalf("AddPartitionsToTxn: topic %q forwarded", tp.Topic)
				}
			}
		}
		for _, tx := range r.Transactions {
			txn(tx.TransactionalID)
			for _, tp := range tx.Topics {
				if tp.Topic != "acme.orders" {
					t.Fatalf("AddPartitionsToTxn: topic %q forwarded", tp.Topic)
				}
			}
		}
	case *kmsg.AddOffsetsToTxnRequest:
		txn(r.TransactionalID)
		group(r.Group)
	case *kmsg.EndTxnRequest:
		txn(r.TransactionalID)
	case *kmsg.TxnOffsetCommitRequest:
		txn(r.TransactionalID)
		group(r.Group)
		for _, tp := range r.Topics {
			if tp.Topic != "acme.orders" && tp.Topic != "acme.audit" {
				t.Fatalf("TxnOffsetCommit: topic %q forwarded", tp.Topic)
			}
		}
	case *kmsg.DescribeClusterRequest:
		if r.IncludeClusterAuthorizedOperations || (r.Version >= 1 && r.EndpointType != 1) {
			t.Fatalf("DescribeCluster forwarded %+v", r)
		}
	default:
		return false
	}
	return true
}

// The seeds above pass the invariants and reach a forward of every key.
func TestTxnFuzzSeeds(t *testing.T) {
	forwarded := map[int16]int{}
	for _, txn := range []bool{false, true} {
		s := fuzzSession(t, txn)
		for _, fr := range txnFuzzSeeds() {
			h, err := codec.ParseRequestHeader(fr)
			if err != nil {
				t.Fatal(err)
			}
			var p Pending
			out := s.Request(&h, fr, txnUpCorr, testGrant, &p)
			if out == Disconnect || out == Drop {
				t.Fatalf("%s v%d: outcome %d (%s)", Name(h.Key), h.Version, out, p.Cause)
			}
			if out != Forward {
				continue
			}
			forwarded[h.Key]++
			var b []byte
			for _, sl := range s.RW.Vec.Slices() {
				b = append(b, sl...)
			}
			if !checkTxnForwarded(t, s, txnForwarded(t, h.Key, h.Version, b[codec.SizeLen:])) {
				t.Fatalf("%s: no invariant", Name(h.Key))
			}
		}
	}
	for _, k := range []int16{24, 25, 26, 28, 60} {
		if forwarded[k] == 0 {
			t.Errorf("no seed forwards %s", Name(k))
		}
	}
}
