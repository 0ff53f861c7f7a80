package decide

// ListOffsets (key 2), versions 1-10: a receive operation opens a topic;
// a consumer's request (ReplicaID -1); refused topics answered by the
// gateway, merged into the broker's answer.

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(2, 1, 10, listOffsetsRequest, listOffsetsResponse) }

func listOffsetsRequest(s *Session, h *codec.RequestHeader, req *kmsg.ListOffsetsRequest, p *Pending) Outcome {
	req.ReplicaID = -1
	req.Topics = keepTopics(req.Topics,
		func(t *kmsg.ListOffsetsRequestTopic) *string { return &t.Topic },
		func(t *kmsg.ListOffsetsRequestTopic) []int32 {
			return partitionsOf(t.Partitions, func(p *kmsg.ListOffsetsRequestTopicPartition) int32 { return p.Partition })
		}, s.receiveTopic, p.refused.topic)
	p.Reserve = AnswerReserve
	if len(req.Topics) == 0 {
		return answerAlone(s, p, listOffsetsResponse)
	}
	return s.forward(h, p, req)
}

func listOffsetsResponse(s *Session, p *Pending, resp *kmsg.ListOffsetsResponse) {
	resp.Topics = mapBack(resp.Topics, func(t *kmsg.ListOffsetsResponseTopic) *string { return &t.Topic }, s.toShort)
	resp.Topics = appendRefused(resp.Topics, p.refused.topics,
		func(name string, ps []kmsg.ListOffsetsResponseTopicPartition) kmsg.ListOffsetsResponseTopic {
			t := kmsg.NewListOffsetsResponseTopic()
			t.Topic, t.Partitions = name, ps
			return t
		},
		func(partition int32, code int16) kmsg.ListOffsetsResponseTopicPartition {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = partition, code
			rp.Offset, rp.Timestamp, rp.LeaderEpoch = -1, -1, -1
			return rp
		})
}
