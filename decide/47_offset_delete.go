package decide

// OffsetDelete (key 47), version 0: the tenant's groups are administered by
// a token carrying the admin_scope of one of the view's receive operations
// (GROUP_AUTHORIZATION_FAILED otherwise, answered by the gateway); the
// group id mapped into <prefix><tenant>.~g.; each topic must be
// administrable (UNKNOWN_TOPIC_OR_PARTITION outside the view,
// TOPIC_AUTHORIZATION_FAILED without the admin_scope), its refused
// partitions answered by the gateway (see admin.go).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(47, 0, 0, offsetDeleteRequest, offsetDeleteResponse) }

func offsetDeleteRequest(s *Session, h *codec.RequestHeader, req *kmsg.OffsetDeleteRequest, p *Pending) Outcome {
	group, code := s.adminGroup(req.Group)
	if code != 0 {
		return refuse(s, p, code, func(r *kmsg.OffsetDeleteResponse) { r.ErrorCode = code })
	}
	req.Group = group
	req.Topics = keepTopics(req.Topics,
		func(t *kmsg.OffsetDeleteRequestTopic) *string { return &t.Topic },
		func(t *kmsg.OffsetDeleteRequestTopic) []int32 {
			return partitionsOf(t.Partitions, func(p *kmsg.OffsetDeleteRequestTopicPartition) int32 { return p.Partition })
		}, s.adminTopic(kerr.UnknownTopicOrPartition.Code), p.refused.topic)
	reserve := int64(AnswerReserve)
	for _, t := range req.Topics {
		reserve += 64 + int64(len(t.Partitions))*8
	}
	alone := len(req.Topics) == 0 && len(p.refused.topics) > 0
	return forwardAdmin(s, h, p, req, alone, boundReserve(reserve), offsetDeleteResponse)
}

func offsetDeleteResponse(s *Session, p *Pending, resp *kmsg.OffsetDeleteResponse) {
	resp.Topics = mapBack(resp.Topics, func(t *kmsg.OffsetDeleteResponseTopic) *string { return &t.Topic }, s.toShort)
	resp.Topics = appendRefused(resp.Topics, p.refused.topics,
		func(name string, ps []kmsg.OffsetDeleteResponseTopicPartition) kmsg.OffsetDeleteResponseTopic {
			t := kmsg.NewOffsetDeleteResponseTopic()
			t.Topic, t.Partitions = name, ps
			return t
		},
		func(partition int32, code int16) kmsg.OffsetDeleteResponseTopicPartition {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = partition, code
			return rp
		})
}
