package decide

// CreateTopics (key 19), versions 0-7: an administrable topic only
// (TOPIC_AUTHORIZATION_FAILED otherwise, also for a topic the contract
// does not declare: what Kafka answers a client that may not create it);
// no replica assignment, at most max_topic_partitions partitions, only
// allow-listed configurations within their bounds (POLICY_VIOLATION).
// Names mapped both ways; refused topics answered by the gateway, merged
// after the broker's answer (see admin.go).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(19, 0, 7, createTopicsRequest, createTopicsResponse) }

func createTopicsRequest(s *Session, h *codec.RequestHeader, req *kmsg.CreateTopicsRequest, p *Pending) Outcome {
	req.Topics = keep(req.Topics, func(t *kmsg.CreateTopicsRequestTopic) bool {
		phys, code := s.View.AdminTopic(t.Topic, kerr.TopicAuthorizationFailed.Code)
		if code == 0 {
			code = s.createTopicPolicy(t)
		}
		if code != 0 {
			p.refused.topic(t.Topic, code, nil)
			return false
		}
		t.Topic = phys
		return true
	})
	return forwardAdmin(s, h, p, req, len(req.Topics) == 0, adminReserveFor(len(req.Topics)), createTopicsResponse)
}

// createTopicPolicy applies the bounds of administration to one topic and
// rewrites its configurations to their canonical values.
func (s *Session) createTopicPolicy(t *kmsg.CreateTopicsRequestTopic) int16 {
	if len(t.ReplicaAssignment) > 0 || !s.partitionsAllowed(t.NumPartitions) {
		return kerr.PolicyViolation.Code
	}
	for i := range t.Configs {
		c := &t.Configs[i]
		v, ok := s.configValue(c.Name, c.Value)
		if !ok {
			return kerr.PolicyViolation.Code
		}
		c.Value = kmsg.StringPtr(v)
	}
	return 0
}

func createTopicsResponse(s *Session, p *Pending, resp *kmsg.CreateTopicsResponse) {
	resp.Topics = mapBack(resp.Topics, func(t *kmsg.CreateTopicsResponseTopic) *string { return &t.Topic }, s.toShort)
	resp.Topics = appendEach(resp.Topics, p.refused.topics, func(r *refusal) kmsg.CreateTopicsResponseTopic {
		t := kmsg.NewCreateTopicsResponseTopic()
		t.Topic, t.ErrorCode = r.name, r.code
		return t
	})
}
