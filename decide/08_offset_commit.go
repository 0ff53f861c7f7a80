package decide

// OffsetCommit (key 8), versions 0-9 (10 names topics by id): a receive
// operation opens groups (GROUP_AUTHORIZATION_FAILED on every partition
// otherwise); the group id is mapped (N1); a topic needs a receive
// operation: one outside the view is UNKNOWN_TOPIC_OR_PARTITION, one not
// opened for receive TOPIC_AUTHORIZATION_FAILED, answered by the gateway
// and merged into the broker's answer; the answer's topics mapped back (N2).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(8, 0, 9, offsetCommitRequest, offsetCommitResponse) }

func offsetCommitRequest(s *Session, h *codec.RequestHeader, req *kmsg.OffsetCommitRequest, p *Pending) Outcome {
	group, code := s.group(req.Group)
	req.Topics = keepTopics(req.Topics,
		func(t *kmsg.OffsetCommitRequestTopic) *string { return &t.Topic },
		func(t *kmsg.OffsetCommitRequestTopic) []int32 {
			return partitionsOf(t.Partitions, func(p *kmsg.OffsetCommitRequestTopicPartition) int32 { return p.Partition })
		}, unless(code, s.receiveTopic), p.refused.topic)
	p.Reserve = AnswerReserve
	if code != 0 || (len(req.Topics) == 0 && len(p.refused.topics) > 0) {
		if code != 0 {
			p.Cause = causeOf(code)
		}
		return answerAlone(s, p, offsetCommitResponse)
	}
	req.Group = group
	return s.forward(h, p, req)
}

func offsetCommitResponse(s *Session, p *Pending, resp *kmsg.OffsetCommitResponse) {
	resp.Topics = mapBack(resp.Topics, func(t *kmsg.OffsetCommitResponseTopic) *string { return &t.Topic }, s.toShort)
	resp.Topics = appendRefused(resp.Topics, p.refused.topics,
		func(name string, ps []kmsg.OffsetCommitResponseTopicPartition) kmsg.OffsetCommitResponseTopic {
			t := kmsg.NewOffsetCommitResponseTopic()
			t.Topic, t.Partitions = name, ps
			return t
		},
		func(partition int32, code int16) kmsg.OffsetCommitResponseTopicPartition {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = partition, code
			return rp
		})
}
