package decide

// AddPartitionsToTxn (key 24), versions 0-5: v0-v3 add one transaction's
// partitions (what clients send: franz-go and the Java client pin v3 and
// below); v4+ batch several transactions and may only verify (KIP-890), the
// broker-to-broker form: Kafka requires CLUSTER_ACTION of the gateway's
// principal for it, and answers CLUSTER_AUTHORIZATION_FAILED otherwise.
//
// Each transaction needs a send operation with transactions: true
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition otherwise); each
// topic a send operation declaring transactions (TOPIC_AUTHORIZATION_FAILED,
// or UNKNOWN_TOPIC_OR_PARTITION for a topic the view does not hold). As
// Kafka does, a transaction with one refused partition is not attempted at
// all: its other partitions are OPERATION_NOT_ATTEMPTED. Refused
// transactions are answered by the gateway, merged into the broker's answer
// to the others.
//
// The refusals wait in the Pending: one entry per refused transaction, with
// its topics and their codes (refused.go).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(24, 0, 5, addPartitionsToTxnRequest, addPartitionsToTxnResponse) }

func addPartitionsToTxnRequest(s *Session, h *codec.RequestHeader, req *kmsg.AddPartitionsToTxnRequest, p *Pending) Outcome {
	p.Reserve = AnswerReserve + int64(s.bodyLen)
	batched := h.Version >= 4
	txns := req.Transactions
	if !batched {
		txns = []kmsg.AddPartitionsToTxnRequestTransaction{{
			TransactionalID: req.TransactionalID,
			ProducerID:      req.ProducerID,
			ProducerEpoch:   req.ProducerEpoch,
		}}
		for _, t := range req.Topics {
			txns[0].Topics = append(txns[0].Topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{
				Topic: t.Topic, Partitions: t.Partitions,
			})
		}
	}
	kept := keep(txns, func(t *kmsg.AddPartitionsToTxnRequestTransaction) bool { return s.addPartitionsJudge(t, p) })
	if len(kept) == 0 {
		p.Cause = "transaction refused"
		return answerAlone(s, p, addPartitionsToTxnResponse)
	}
	if batched {
		req.Transactions = kept
	} else {
		t := &kept[0]
		req.TransactionalID = t.TransactionalID
		req.Topics = req.Topics[:0]
		for _, tt := range t.Topics {
			req.Topics = append(req.Topics, kmsg.AddPartitionsToTxnRequestTopic{Topic: tt.Topic, Partitions: tt.Partitions})
		}
	}
	return s.forward(h, p, req)
}

// addPartitionsJudge renames t to the broker's names and returns true, or
// records its refusal in p and returns false.
func (s *Session) addPartitionsJudge(t *kmsg.AddPartitionsToTxnRequestTransaction, p *Pending) bool {
	code := s.txnRefusal(t.TransactionalID)
	refused := code != 0
	for i := 0; i < len(t.Topics) && !refused; i++ {
		_, c := s.txnTopic(t.Topics[i].Topic)
		refused = c != 0
	}
	if refused {
		txn := txnRefusal{id: t.TransactionalID}
		for _, tt := range t.Topics {
			c := code
			if c == 0 {
				if _, c = s.txnTopic(tt.Topic); c == 0 {
					c = kerr.OperationNotAttempted.Code
				}
			}
			txn.topics = append(txn.topics, refusal{name: tt.Topic, code: c, partitions: append([]int32(nil), tt.Partitions...)})
		}
		p.refused.txns = append(p.refused.txns, txn)
		return false
	}
	for i := range t.Topics {
		t.Topics[i].Topic, _ = s.txnTopic(t.Topics[i].Topic)
	}
	t.TransactionalID = s.View.TxnName(t.TransactionalID)
	return true
}

func addPartitionsToTxnResponse(s *Session, p *Pending, resp *kmsg.AddPartitionsToTxnResponse) {
	resp.Topics = mapBack(resp.Topics, func(t *kmsg.AddPartitionsToTxnResponseTopic) *string { return &t.Topic }, s.toShort)
	resp.Transactions = mapBack(resp.Transactions, func(t *kmsg.AddPartitionsToTxnResponseTransaction) *string { return &t.TransactionalID }, s.txnShort)
	for i := range resp.Transactions {
		txn := &resp.Transactions[i]
		txn.Topics = mapBack(txn.Topics, func(t *kmsg.AddPartitionsToTxnResponseTransactionTopic) *string { return &t.Topic }, s.toShort)
	}
	// The gateway's refusals: from v4 in the transaction of the answer
	// named as the refused one (the last such), or a new one.
	for _, refused := range p.refused.txns {
		if resp.Version < 4 {
			resp.Topics = appendRefused(resp.Topics, refused.topics,
				func(name string, ps []kmsg.AddPartitionsToTxnResponseTopicPartition) kmsg.AddPartitionsToTxnResponseTopic {
					t := kmsg.NewAddPartitionsToTxnResponseTopic()
					t.Topic, t.Partitions = name, ps
					return t
				},
				func(partition int32, code int16) kmsg.AddPartitionsToTxnResponseTopicPartition {
					rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
					rp.Partition, rp.ErrorCode = partition, code
					return rp
				})
			continue
		}
		var txn *kmsg.AddPartitionsToTxnResponseTransaction
		for j := range resp.Transactions {
			if resp.Transactions[j].TransactionalID == refused.id {
				txn = &resp.Transactions[j]
			}
		}
		if txn == nil {
			resp.Transactions = append(resp.Transactions, kmsg.NewAddPartitionsToTxnResponseTransaction())
			txn = &resp.Transactions[len(resp.Transactions)-1]
			txn.TransactionalID = refused.id
		}
		txn.Topics = appendRefused(txn.Topics, refused.topics,
			func(name string, ps []kmsg.AddPartitionsToTxnResponseTransactionTopicPartition) kmsg.AddPartitionsToTxnResponseTransactionTopic {
				t := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				t.Topic, t.Partitions = name, ps
				return t
			},
			func(partition int32, code int16) kmsg.AddPartitionsToTxnResponseTransactionTopicPartition {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = partition, code
				return rp
			})
	}
}
