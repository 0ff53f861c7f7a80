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

func init() { reg(24, Served, 0, 5, addPartitionsToTxnRequest, addPartitionsToTxnResponse) }

func addPartitionsToTxnRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed AddPartitionsToTxn"
		return Disconnect, nil
	}
	req := r.(*kmsg.AddPartitionsToTxnRequest)
	p.Reserve = answerReserve + int64(len(body))
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
	kept := txns[:0]
	for _, t := range txns {
		if s.addPartitionsJudge(&t, p) {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		resp := kmsg.NewPtrAddPartitionsToTxnResponse()
		resp.Version = h.Version
		mergeAddPartitionsDropped(resp, p)
		s.answerKmsg(p, resp)
		p.Cause = "transaction refused"
		return Answer, nil
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
	s.forwardKmsg(h, p.UpCorr, req)
	return Forward, nil
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

// mergeAddPartitionsDropped appends the gateway's refusals to resp: from
// v4 in the transaction of the answer named as the refused one (the last
// such), or a new one.
func mergeAddPartitionsDropped(resp *kmsg.AddPartitionsToTxnResponse, p *Pending) {
	for _, refused := range p.refused.txns {
		if resp.Version < 4 {
			for _, d := range refused.topics {
				t := kmsg.NewAddPartitionsToTxnResponseTopic()
				t.Topic = d.name
				for _, part := range d.partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
					rp.Partition, rp.ErrorCode = part, d.code
					t.Partitions = append(t.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, t)
			}
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
		for _, d := range refused.topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = d.name
			for _, part := range d.partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = part, d.code
				rt.Partitions = append(rt.Partitions, rp)
			}
			txn.Topics = append(txn.Topics, rt)
		}
	}
}

func addPartitionsToTxnResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.AddPartitionsToTxnResponse)
	kept := resp.Topics[:0]
	for _, t := range resp.Topics {
		if short, ok := s.View.Short(t.Topic); ok {
			t.Topic = short
			kept = append(kept, t)
		}
	}
	resp.Topics = kept
	keptTxns := resp.Transactions[:0]
	for _, txn := range resp.Transactions {
		id, ok := s.txnShort(txn.TransactionalID)
		if !ok {
			continue
		}
		txn.TransactionalID = id
		topics := txn.Topics[:0]
		for _, t := range txn.Topics {
			if short, ok := s.View.Short(t.Topic); ok {
				t.Topic = short
				topics = append(topics, t)
			}
		}
		txn.Topics = topics
		keptTxns = append(keptTxns, txn)
	}
	resp.Transactions = keptTxns
	mergeAddPartitionsDropped(resp, p)
	s.answerKmsg(p, resp)
	return nil
}
