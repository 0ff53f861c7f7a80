// AddPartitionsToTxn: all or nothing per transaction, batches judged per
// transaction (v4+), answers mapped back by topic (v0-v3). The session and
// helpers are txn_test.go's.

package decide

import (
	"slices"
	"testing"

	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// As Kafka does, one refused partition fails the whole transaction's add:
// the refused ones carry their code, the others OPERATION_NOT_ATTEMPTED, and
// nothing reaches the broker. A topic sent to by an operation without
// transactions is TOPIC_AUTHORIZATION_FAILED.
func TestAddPartitionsToTxnAllOrNothing(t *testing.T) {
	s := txnSession(t, func(snap *configs.Snapshot) {
		snap.Operations["acme-send-audit"] = &configs.Operation{ID: "acme-send-audit", Action: "send",
			Channel: "audit", Cluster: "shop", Upstream: "main", Plain: true}
	}, "acme-send-orders", "acme-send-audit", "acme-recv-orders")
	if !s.View.Transactions {
		t.Fatal("the view should allow transactions")
	}
	for _, v := range []int16{0, 3} {
		out, p, b := txnJudge(t, s, apRequest(v, "tx-orders", "orders", "audit", "payments"))
		if out != Answer {
			t.Fatalf("v%d: outcome %d", v, out)
		}
		got := apCodes(txnAnswer(t, p, b).(*kmsg.AddPartitionsToTxnResponse))
		want := []string{
			"audit/0=TOPIC_AUTHORIZATION_FAILED", "audit/1=TOPIC_AUTHORIZATION_FAILED",
			"orders/0=OPERATION_NOT_ATTEMPTED", "orders/1=OPERATION_NOT_ATTEMPTED",
			"payments/0=UNKNOWN_TOPIC_OR_PARTITION", "payments/1=UNKNOWN_TOPIC_OR_PARTITION",
		}
		if !slices.Equal(got, want) {
			t.Fatalf("v%d: %v, want %v", v, got, want)
		}
	}
}

// v4+: each transaction of a batch is judged alone; the refused ones are
// answered by the gateway and merged into the broker's answer for the
// others; a transaction or a topic outside the tenant never crosses back.
func TestAddPartitionsToTxnBatched(t *testing.T) {
	s := fuzzSession(t, true)
	req := apRequest(4, "tx-a", "orders")
	b2 := apRequest(4, "tx-b", "orders", "audit")
	b3 := apRequest(4, "tx-c")
	req.Transactions = append(req.Transactions, b2.Transactions[0], b3.Transactions[0])
	req.Transactions[0].VerifyOnly = true
	out, p, b := txnJudge(t, s, req)
	if out != Forward {
		t.Fatalf("outcome %d", out)
	}
	fw := txnForwarded(t, 24, 4, b).(*kmsg.AddPartitionsToTxnRequest)
	if len(fw.Transactions) != 2 || fw.Transactions[0].TransactionalID != "acme.~t.tx-a" || !fw.Transactions[0].VerifyOnly ||
		fw.Transactions[0].Topics[0].Topic != "acme.orders" || fw.Transactions[1].TransactionalID != "acme.~t.tx-c" ||
		len(fw.Transactions[1].Topics) != 0 {
		t.Fatalf("forwarded %+v", fw.Transactions)
	}
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	for _, id := range []string{"acme.~t.tx-a", "globex.~t.tx-a", "acme.~t.tx-c"} {
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = id
		if id != "acme.~t.tx-c" {
			for _, name := range []string{"acme.orders", "globex.orders"} {
				tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				tt.Topic = name
				tt.Partitions = []kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{{Partition: 0}, {Partition: 1}}
				rt.Topics = append(rt.Topics, tt)
			}
		}
		resp.Transactions = append(resp.Transactions, rt)
	}
	got := apCodes(txnReply(t, s, p, resp).(*kmsg.AddPartitionsToTxnResponse))
	want := []string{
		"tx-a:orders/0=<nil>", "tx-a:orders/1=<nil>",
		"tx-b:audit/0=TOPIC_AUTHORIZATION_FAILED", "tx-b:audit/1=TOPIC_AUTHORIZATION_FAILED",
		"tx-b:orders/0=OPERATION_NOT_ATTEMPTED", "tx-b:orders/1=OPERATION_NOT_ATTEMPTED",
		"tx-c:",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("merged answer %v, want %v", got, want)
	}

	// Every transaction refused: answered without asking, one entry per
	// transaction (a transaction without topics too).
	s = fuzzSession(t, false)
	req = apRequest(5, "tx-a", "orders")
	req.Transactions = append(req.Transactions, b3.Transactions[0])
	out, p, b = txnJudge(t, s, req)
	if out != Answer {
		t.Fatalf("outcome %d", out)
	}
	got = apCodes(txnAnswer(t, p, b).(*kmsg.AddPartitionsToTxnResponse))
	want = []string{"tx-a:orders/0=TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "tx-a:orders/1=TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "tx-c:"}
	if !slices.Equal(got, want) {
		t.Fatalf("answer %v, want %v", got, want)
	}
}

// v0-v3 answers are mapped back by topic; another tenant's never crosses.
func TestAddPartitionsToTxnAnswerMapped(t *testing.T) {
	s := fuzzSession(t, true)
	out, p, _ := txnJudge(t, s, apRequest(3, "tx-orders", "orders"))
	if out != Forward {
		t.Fatalf("outcome %d", out)
	}
	resp := kmsg.NewPtrAddPartitionsToTxnResponse()
	for _, name := range []string{"acme.orders", "globex.orders", "orders"} {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = name
		rt.Partitions = []kmsg.AddPartitionsToTxnResponseTopicPartition{{Partition: 0, ErrorCode: 51}}
		resp.Topics = append(resp.Topics, rt)
	}
	got := apCodes(txnReply(t, s, p, resp).(*kmsg.AddPartitionsToTxnResponse))
	if !slices.Equal(got, []string{"orders/0=CONCURRENT_TRANSACTIONS"}) {
		t.Fatalf("answer %v", got)
	}
}
