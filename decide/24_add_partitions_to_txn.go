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
// The refusals wait in the Pending: p.Dropped holds one entry per refused
// topic, and p.unknownTopics, parallel to it, the transaction it belongs to
// (an entry with a nil name stands for a refused transaction without topics).

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
		for _, tt := range t.Topics {
			c := code
			if c == 0 {
				if _, c = s.txnTopic(tt.Topic); c == 0 {
					c = kerr.OperationNotAttempted.Code
				}
			}
			d := addDropped(&p.Dropped, tt.Topic, c)
			d.Partitions = append(d.Partitions, tt.Partitions...)
			p.unknownTopics = append(p.unknownTopics, t.TransactionalID)
		}
		if len(t.Topics) == 0 {
			p.Dropped.Topics = append(p.Dropped.Topics, codec.DroppedTopic{Code: code})
			p.unknownTopics = append(p.unknownTopics, t.TransactionalID)
		}
		return false
	}
	for i := range t.Topics {
		t.Topics[i].Topic, _ = s.txnTopic(t.Topics[i].Topic)
	}
	t.TransactionalID = s.View.TxnName(t.TransactionalID)
	return true
}

// mergeAddPartitionsDropped appends the gateway's refusals to resp.
func mergeAddPartitionsDropped(resp *kmsg.AddPartitionsToTxnResponse, p *Pending) {
	for i, d := range p.Dropped.Topics {
		var rt *kmsg.AddPartitionsToTxnResponseTransactionTopic
		if resp.Version >= 4 {
			id := p.unknownTopics[i]
			var txn *kmsg.AddPartitionsToTxnResponseTransaction
			for j := range resp.Transactions {
				if resp.Transactions[j].TransactionalID == id {
					txn = &resp.Transactions[j]
				}
			}
			if txn == nil {
				resp.Transactions = append(resp.Transactions, kmsg.NewAddPartitionsToTxnResponseTransaction())
				txn = &resp.Transactions[len(resp.Transactions)-1]
				txn.TransactionalID = id
			}
			if d.Name == nil {
				continue
			}
			txn.Topics = append(txn.Topics, kmsg.NewAddPartitionsToTxnResponseTransactionTopic())
			rt = &txn.Topics[len(txn.Topics)-1]
			rt.Topic = string(d.Name)
			for _, part := range d.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = part, d.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			continue
		}
		if d.Name == nil {
			continue
		}
		t := kmsg.NewAddPartitionsToTxnResponseTopic()
		t.Topic = string(d.Name)
		for _, part := range d.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = part, d.Code
			t.Partitions = append(t.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, t)
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
