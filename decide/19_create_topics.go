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

func init() { reg(19, Served, 0, 7, createTopicsRequest, createTopicsResponse) }

func createTopicsRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed CreateTopics"
		return Disconnect, nil
	}
	req := r.(*kmsg.CreateTopicsRequest)
	kept := req.Topics[:0]
	for _, t := range req.Topics {
		phys, code := s.View.AdminTopic(t.Topic, kerr.TopicAuthorizationFailed.Code)
		if code == 0 {
			code = s.createTopicPolicy(&t)
		}
		if code != 0 {
			p.refused.topic(t.Topic, code, nil)
			continue
		}
		t.Topic = phys
		kept = append(kept, t)
	}
	req.Topics = kept
	if adminTooManyRefused(p, "CreateTopics") {
		return Disconnect, nil
	}
	if len(kept) == 0 {
		resp := kmsg.NewPtrCreateTopicsResponse()
		resp.Version = h.Version
		mergeCreateTopicsDropped(resp, p.refused.topics)
		s.answerKmsg(p, resp)
		p.Cause = adminCause(p)
		return Answer, nil
	}
	s.forwardKmsg(h, p.UpCorr, req)
	p.Reserve = adminReserveFor(len(kept))
	return Forward, nil
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

func mergeCreateTopicsDropped(resp *kmsg.CreateTopicsResponse, refused []refusal) {
	for _, t := range refused {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.name
		rt.ErrorCode = t.code
		resp.Topics = append(resp.Topics, rt)
	}
}

func createTopicsResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.CreateTopicsResponse)
	kept := resp.Topics[:0]
	for _, t := range resp.Topics {
		if short, ok := s.View.Short(t.Topic); ok {
			t.Topic = short
			kept = append(kept, t)
		}
	}
	resp.Topics = kept
	mergeCreateTopicsDropped(resp, p.refused.topics)
	s.answerKmsg(p, resp)
	return nil
}
