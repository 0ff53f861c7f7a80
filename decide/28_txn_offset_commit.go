package decide

// TxnOffsetCommit (key 28), versions 0-5 (6 names topics by id): a send
// operation with transactions: true (TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// on every partition otherwise), a receive operation for the group
// (GROUP_AUTHORIZATION_FAILED otherwise), and for each topic a receive
// operation (the offsets are those of what the transaction consumed):
// TOPIC_AUTHORIZATION_FAILED, or UNKNOWN_TOPIC_OR_PARTITION for a topic the
// view does not hold. As Kafka does, the other topics are committed: the
// refused ones are answered by the gateway, merged into the broker's
// answer. The transactional id is written <prefix><tenant>.~t.<id>, the
// group <prefix><tenant>.~g.<id>; the member and instance ids are the
// group's own and pass (N1, D6, D7).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { reg(28, Served, 0, 5, txnOffsetCommitRequest, txnOffsetCommitResponse) }

func txnOffsetCommitRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed TxnOffsetCommit"
		return Disconnect, nil
	}
	req := r.(*kmsg.TxnOffsetCommitRequest)
	p.Reserve = answerReserve + int64(len(body))
	code := s.txnRefusal(req.TransactionalID)
	var group string
	if code == 0 {
		group, code = s.txnGroup(req.Group)
	}
	asked := len(req.Topics)
	kept := req.Topics[:0]
	for _, t := range req.Topics {
		c := code
		var phys []byte
		if c == 0 {
			phys, c = s.View.FetchTopic([]byte(t.Topic))
		}
		if c != 0 {
			var parts []int32
			for _, pp := range t.Partitions {
				parts = append(parts, pp.Partition)
			}
			p.refused.topic(t.Topic, c, parts)
			continue
		}
		t.Topic = string(phys)
		kept = append(kept, t)
	}
	req.Topics = kept
	if code != 0 || (len(kept) == 0 && asked > 0) {
		resp := kmsg.NewPtrTxnOffsetCommitResponse()
		resp.Version = h.Version
		mergeTxnOffsetCommitDropped(resp, p.refused.topics)
		s.answerKmsg(p, resp)
		if code != 0 {
			p.Cause = kerr.ErrorForCode(code).Error()
		}
		return Answer, nil
	}
	req.TransactionalID = s.View.TxnName(req.TransactionalID)
	req.Group = group
	s.forwardKmsg(h, p.UpCorr, req)
	return Forward, nil
}

func mergeTxnOffsetCommitDropped(resp *kmsg.TxnOffsetCommitResponse, refused []refusal) {
	for _, t := range refused {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.name
		for _, part := range t.partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = part, t.code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
}

func txnOffsetCommitResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.TxnOffsetCommitResponse)
	kept := resp.Topics[:0]
	for _, t := range resp.Topics {
		if short, ok := s.View.Short(t.Topic); ok {
			t.Topic = short
			kept = append(kept, t)
		}
	}
	resp.Topics = kept
	mergeTxnOffsetCommitDropped(resp, p.refused.topics)
	s.answerKmsg(p, resp)
	return nil
}
