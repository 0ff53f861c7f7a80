package decide

// DeleteTopics (key 20), versions 0-5 (v6 names topics by id: never
// served): an administrable topic only; a topic outside the view is
// UNKNOWN_TOPIC_OR_PARTITION (Kafka checks DESCRIBE first), one of the
// view without the admin_scope TOPIC_AUTHORIZATION_FAILED. Names mapped
// both ways; refused topics answered by the gateway (see admin.go).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(20, 0, 5, deleteTopicsRequest, deleteTopicsResponse) }

func deleteTopicsRequest(s *Session, h *codec.RequestHeader, req *kmsg.DeleteTopicsRequest, p *Pending) Outcome {
	req.TopicNames = keepTopics(req.TopicNames, func(n *string) *string { return n }, nil,
		s.adminTopic(kerr.UnknownTopicOrPartition.Code), p.refused.topic)
	req.Topics = nil // v6+ only
	return forwardAdmin(s, h, p, req, len(req.TopicNames) == 0, boundReserve(AnswerReserve+int64(len(req.TopicNames))*64), deleteTopicsResponse)
}

func deleteTopicsResponse(s *Session, p *Pending, resp *kmsg.DeleteTopicsResponse) {
	resp.Topics = keep(resp.Topics, func(t *kmsg.DeleteTopicsResponseTopic) bool {
		if t.Topic == nil {
			return false
		}
		short, ok := s.View.Short(*t.Topic)
		if ok {
			t.Topic = kmsg.StringPtr(short)
		}
		return ok
	})
	resp.Topics = appendEach(resp.Topics, p.refused.topics, func(r *refusal) kmsg.DeleteTopicsResponseTopic {
		t := kmsg.NewDeleteTopicsResponseTopic()
		t.Topic, t.ErrorCode = kmsg.StringPtr(r.name), r.code
		return t
	})
}
