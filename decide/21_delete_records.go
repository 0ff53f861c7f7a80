package decide

// DeleteRecords (key 21), versions 0-2: an administrable topic only
// (TOPIC_AUTHORIZATION_FAILED otherwise, as Kafka answers a client without
// DELETE on it). Names mapped both ways; refused partitions answered by
// the gateway (see admin.go).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(21, 0, 2, deleteRecordsRequest, deleteRecordsResponse) }

func deleteRecordsRequest(s *Session, h *codec.RequestHeader, req *kmsg.DeleteRecordsRequest, p *Pending) Outcome {
	req.Topics = keepTopics(req.Topics,
		func(t *kmsg.DeleteRecordsRequestTopic) *string { return &t.Topic },
		func(t *kmsg.DeleteRecordsRequestTopic) []int32 {
			return partitionsOf(t.Partitions, func(p *kmsg.DeleteRecordsRequestTopicPartition) int32 { return p.Partition })
		}, s.adminTopic(kerr.TopicAuthorizationFailed.Code), p.refused.topic)
	reserve := int64(AnswerReserve)
	for _, t := range req.Topics {
		reserve += 64 + int64(len(t.Partitions))*16
	}
	return forwardAdmin(s, h, p, req, len(req.Topics) == 0, boundReserve(reserve), deleteRecordsResponse)
}

func deleteRecordsResponse(s *Session, p *Pending, resp *kmsg.DeleteRecordsResponse) {
	resp.Topics = mapBack(resp.Topics, func(t *kmsg.DeleteRecordsResponseTopic) *string { return &t.Topic }, s.toShort)
	resp.Topics = appendRefused(resp.Topics, p.refused.topics,
		func(name string, ps []kmsg.DeleteRecordsResponseTopicPartition) kmsg.DeleteRecordsResponseTopic {
			t := kmsg.NewDeleteRecordsResponseTopic()
			t.Topic, t.Partitions = name, ps
			return t
		},
		func(partition int32, code int16) kmsg.DeleteRecordsResponseTopicPartition {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark, rp.ErrorCode = partition, -1, code
			return rp
		})
}
