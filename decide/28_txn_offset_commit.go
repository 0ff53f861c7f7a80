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
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(28, 0, 5, txnOffsetCommitRequest, txnOffsetCommitResponse) }

func txnOffsetCommitRequest(s *Session, h *codec.RequestHeader, req *kmsg.TxnOffsetCommitRequest, p *Pending) Outcome {
	p.Reserve = AnswerReserve + int64(s.bodyLen)
	code := s.txnRefusal(req.TransactionalID)
	var group string
	if code == 0 {
		group, code = s.group(req.Group)
	}
	asked := len(req.Topics)
	req.Topics = keepTopics(req.Topics,
		func(t *kmsg.TxnOffsetCommitRequestTopic) *string { return &t.Topic },
		func(t *kmsg.TxnOffsetCommitRequestTopic) []int32 {
			return partitionsOf(t.Partitions, func(p *kmsg.TxnOffsetCommitRequestTopicPartition) int32 { return p.Partition })
		}, unless(code, s.receiveTopic), p.refused.topic)
	if code != 0 || (len(req.Topics) == 0 && asked > 0) {
		if code != 0 {
			p.Cause = causeOf(code)
		}
		return answerAlone(s, p, txnOffsetCommitResponse)
	}
	req.TransactionalID = s.View.TxnName(req.TransactionalID)
	req.Group = group
	return s.forward(h, p, req)
}

func txnOffsetCommitResponse(s *Session, p *Pending, resp *kmsg.TxnOffsetCommitResponse) {
	resp.Topics = mapBack(resp.Topics, func(t *kmsg.TxnOffsetCommitResponseTopic) *string { return &t.Topic }, s.toShort)
	resp.Topics = appendRefused(resp.Topics, p.refused.topics,
		func(name string, ps []kmsg.TxnOffsetCommitResponseTopicPartition) kmsg.TxnOffsetCommitResponseTopic {
			t := kmsg.NewTxnOffsetCommitResponseTopic()
			t.Topic, t.Partitions = name, ps
			return t
		},
		func(partition int32, code int16) kmsg.TxnOffsetCommitResponseTopicPartition {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = partition, code
			return rp
		})
}
