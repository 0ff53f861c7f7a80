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

func init() { reg(37, Served, 0, 3, createPartitionsRequest, createPartitionsResponse) }

func createPartitionsRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed CreatePartitions"
		return Disconnect, nil
	}
	req := r.(*kmsg.CreatePartitionsRequest)
	kept := req.Topics[:0]
	for _, t := range req.Topics {
		phys, code := s.View.AdminTopic(t.Topic, kerr.TopicAuthorizationFailed.Code)
		if code == 0 && (len(t.Assignment) > 0 || !s.partitionsAllowed(t.Count)) {
			code = kerr.PolicyViolation.Code
		}
		if code != 0 {
			p.refused.topic(t.Topic, code, nil)
			continue
		}
		t.Topic = phys
		t.Assignment = nil // placement is the cluster's
		kept = append(kept, t)
	}
	req.Topics = kept
	if adminTooManyRefused(p, "CreatePartitions") {
		return Disconnect, nil
	}
	if len(kept) == 0 {
		resp := kmsg.NewPtrCreatePartitionsResponse()
		resp.Version = h.Version
		mergeCreatePartitionsDropped(resp, p.refused.topics)
		s.answerKmsg(p, resp)
		p.Cause = adminCause(p)
		return Answer, nil
	}
	s.forwardKmsg(h, p.UpCorr, req)
	p.Reserve = boundReserve(answerReserve + int64(len(kept))*64)
	return Forward, nil
}

func mergeCreatePartitionsDropped(resp *kmsg.CreatePartitionsResponse, refused []refusal) {
	for _, t := range refused {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode = t.name, t.code
		resp.Topics = append(resp.Topics, rt)
	}
}

func createPartitionsResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.CreatePartitionsResponse)
	kept := resp.Topics[:0]
	for _, t := range resp.Topics {
		if short, ok := s.View.Short(t.Topic); ok {
			t.Topic = short
			kept = append(kept, t)
		}
	}
	resp.Topics = kept
	mergeCreatePartitionsDropped(resp, p.refused.topics)
	s.answerKmsg(p, resp)
	return nil
}
