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

func init() { reg(20, Served, 0, 5, deleteTopicsRequest, deleteTopicsResponse) }

func deleteTopicsRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed DeleteTopics"
		return Disconnect, nil
	}
	req := r.(*kmsg.DeleteTopicsRequest)
	kept := req.TopicNames[:0]
	for _, name := range req.TopicNames {
		phys, code := s.View.AdminTopic(name, kerr.UnknownTopicOrPartition.Code)
		if code != 0 {
			p.refused.topic(name, code, nil)
			continue
		}
		kept = append(kept, phys)
	}
	req.TopicNames = kept
	req.Topics = nil // v6+ only
	if adminTooManyRefused(p, "DeleteTopics") {
		return Disconnect, nil
	}
	if len(kept) == 0 {
		resp := kmsg.NewPtrDeleteTopicsResponse()
		resp.Version = h.Version
		mergeDeleteTopicsDropped(resp, p.refused.topics)
		s.answerKmsg(p, resp)
		p.Cause = adminCause(p)
		return Answer, nil
	}
	s.forwardKmsg(h, p.UpCorr, req)
	p.Reserve = boundReserve(answerReserve + int64(len(kept))*64)
	return Forward, nil
}

func mergeDeleteTopicsDropped(resp *kmsg.DeleteTopicsResponse, refused []refusal) {
	for _, t := range refused {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic = kmsg.StringPtr(t.name)
		rt.ErrorCode = t.code
		resp.Topics = append(resp.Topics, rt)
	}
}

func deleteTopicsResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.DeleteTopicsResponse)
	kept := resp.Topics[:0]
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		if short, ok := s.View.Short(*t.Topic); ok {
			t.Topic = kmsg.StringPtr(short)
			kept = append(kept, t)
		}
	}
	resp.Topics = kept
	mergeDeleteTopicsDropped(resp, p.refused.topics)
	s.answerKmsg(p, resp)
	return nil
}
