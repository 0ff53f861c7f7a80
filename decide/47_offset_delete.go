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

func init() { reg(47, Served, 0, 0, offsetDeleteRequest, offsetDeleteResponse) }

func offsetDeleteRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed OffsetDelete"
		return Disconnect, nil
	}
	req := r.(*kmsg.OffsetDeleteRequest)
	name, ok := s.groupName(req.Group)
	code := int16(0)
	switch {
	case !s.View.CanAdminGroups:
		code = kerr.GroupAuthorizationFailed.Code
	case !ok:
		code = kerr.InvalidGroupID.Code
	}
	if code != 0 {
		resp := kmsg.NewPtrOffsetDeleteResponse()
		resp.Version = h.Version
		resp.ErrorCode = code
		s.answerKmsg(p, resp)
		p.Cause = causeOf(code)
		return Answer, nil
	}
	req.Group = name
	kept := req.Topics[:0]
	for _, t := range req.Topics {
		phys, code := s.View.AdminTopic(t.Topic, kerr.UnknownTopicOrPartition.Code)
		if code != 0 {
			var parts []int32
			for _, pp := range t.Partitions {
				parts = append(parts, pp.Partition)
			}
			p.refused.topic(t.Topic, code, parts)
			continue
		}
		t.Topic = phys
		kept = append(kept, t)
	}
	req.Topics = kept
	if adminTooManyRefused(p, "OffsetDelete") {
		return Disconnect, nil
	}
	if len(kept) == 0 && len(p.refused.topics) > 0 {
		resp := kmsg.NewPtrOffsetDeleteResponse()
		resp.Version = h.Version
		mergeOffsetDeleteDropped(resp, p.refused.topics)
		s.answerKmsg(p, resp)
		p.Cause = adminCause(p)
		return Answer, nil
	}
	s.forwardKmsg(h, p.UpCorr, req)
	p.Reserve = answerReserve
	for _, t := range kept {
		p.Reserve += 64 + int64(len(t.Partitions))*8
	}
	p.Reserve = boundReserve(p.Reserve)
	return Forward, nil
}

func mergeOffsetDeleteDropped(resp *kmsg.OffsetDeleteResponse, refused []refusal) {
	for _, t := range refused {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.name
		for _, part := range t.partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = part, t.code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
}

func offsetDeleteResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.OffsetDeleteResponse)
	kept := resp.Topics[:0]
	for _, t := range resp.Topics {
		if short, ok := s.View.Short(t.Topic); ok {
			t.Topic = short
			kept = append(kept, t)
		}
	}
	resp.Topics = kept
	mergeOffsetDeleteDropped(resp, p.refused.topics)
	s.answerKmsg(p, resp)
	return nil
}
