package decide

// OffsetForLeaderEpoch (key 23), versions 2-4: a receive operation opens a
// topic; a consumer's request (ReplicaID -1).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(23, 2, 4, offsetForLeaderEpochRequest, offsetForLeaderEpochResponse) }

func offsetForLeaderEpochRequest(s *Session, h *codec.RequestHeader, req *kmsg.OffsetForLeaderEpochRequest, p *Pending) Outcome {
	req.ReplicaID = -1
	req.Topics = keepTopics(req.Topics,
		func(t *kmsg.OffsetForLeaderEpochRequestTopic) *string { return &t.Topic },
		func(t *kmsg.OffsetForLeaderEpochRequestTopic) []int32 {
			return partitionsOf(t.Partitions, func(p *kmsg.OffsetForLeaderEpochRequestTopicPartition) int32 { return p.Partition })
		}, s.receiveTopic, p.refused.topic)
	p.Reserve = AnswerReserve
	if len(req.Topics) == 0 {
		return answerAlone(s, p, offsetForLeaderEpochResponse)
	}
	return s.forward(h, p, req)
}

func offsetForLeaderEpochResponse(s *Session, p *Pending, resp *kmsg.OffsetForLeaderEpochResponse) {
	resp.Topics = mapBack(resp.Topics, func(t *kmsg.OffsetForLeaderEpochResponseTopic) *string { return &t.Topic }, s.toShort)
	resp.Topics = appendRefused(resp.Topics, p.refused.topics,
		func(name string, ps []kmsg.OffsetForLeaderEpochResponseTopicPartition) kmsg.OffsetForLeaderEpochResponseTopic {
			t := kmsg.NewOffsetForLeaderEpochResponseTopic()
			t.Topic, t.Partitions = name, ps
			return t
		},
		func(partition int32, code int16) kmsg.OffsetForLeaderEpochResponseTopicPartition {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition, rp.ErrorCode = partition, code
			rp.LeaderEpoch, rp.EndOffset = -1, -1
			return rp
		})
}
