package decide

// CreatePartitions (key 37), versions 0-3: an administrable topic only
// (TOPIC_AUTHORIZATION_FAILED otherwise); no replica assignment and a new
// total of at most max_topic_partitions (POLICY_VIOLATION). Names mapped
// both ways; refused topics answered by the gateway (see admin.go).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(37, 0, 3, createPartitionsRequest, createPartitionsResponse) }

func createPartitionsRequest(s *Session, h *codec.RequestHeader, req *kmsg.CreatePartitionsRequest, p *Pending) Outcome {
	req.Topics = keep(req.Topics, func(t *kmsg.CreatePartitionsRequestTopic) bool {
		phys, code := s.View.AdminTopic(t.Topic, kerr.TopicAuthorizationFailed.Code)
		if code == 0 && (len(t.Assignment) > 0 || !s.partitionsAllowed(t.Count)) {
			code = kerr.PolicyViolation.Code
		}
		if code != 0 {
			p.refused.topic(t.Topic, code, nil)
			return false
		}
		t.Topic = phys
		t.Assignment = nil // placement is the cluster's
		return true
	})
	return forwardAdmin(s, h, p, req, len(req.Topics) == 0, boundReserve(AnswerReserve+int64(len(req.Topics))*64), createPartitionsResponse)
}

func createPartitionsResponse(s *Session, p *Pending, resp *kmsg.CreatePartitionsResponse) {
	resp.Topics = mapBack(resp.Topics, func(t *kmsg.CreatePartitionsResponseTopic) *string { return &t.Topic }, s.toShort)
	resp.Topics = appendEach(resp.Topics, p.refused.topics, func(r *refusal) kmsg.CreatePartitionsResponseTopic {
		t := kmsg.NewCreatePartitionsResponseTopic()
		t.Topic, t.ErrorCode = r.name, r.code
		return t
	})
}
