package decide

// IncrementalAlterConfigs (key 44), versions 0-1: topic resources of
// administrable topics only (TOPIC_AUTHORIZATION_FAILED otherwise); never
// a broker resource (CLUSTER_AUTHORIZATION_FAILED; GROUP_AUTHORIZATION_FAILED
// for a group's). Only allow-listed configurations within their bounds: a
// resource with one operation outside them is refused whole
// (POLICY_VIOLATION), as Kafka applies a resource's operations together; a
// DELETE of an allow-listed key always passes; values forwarded in their
// canonical form. Names mapped both ways; refused resources answered by
// the gateway (see admin.go).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { reg(44, Served, 0, 1, alterConfigsRequest, alterConfigsResponse) }

func alterConfigsRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed IncrementalAlterConfigs"
		return Disconnect, nil
	}
	req := r.(*kmsg.IncrementalAlterConfigsRequest)
	kept := req.Resources[:0]
	for _, res := range req.Resources {
		phys, code := s.configResource(res.ResourceType, res.ResourceName)
		if code == 0 {
			for i := range res.Configs {
				if !s.alterConfig(&res.Configs[i]) {
					code = kerr.PolicyViolation.Code
					break
				}
			}
		}
		if code != 0 {
			p.refused.resource(res.ResourceType, res.ResourceName, code)
			continue
		}
		res.ResourceName = phys
		kept = append(kept, res)
	}
	req.Resources = kept
	if adminTooManyRefused(p, "IncrementalAlterConfigs") {
		return Disconnect, nil
	}
	if len(kept) == 0 {
		resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
		resp.Version = h.Version
		mergeAlterConfigsDropped(resp, p.refused.resources)
		s.answerKmsg(p, resp)
		p.Cause = adminCause(p)
		return Answer, nil
	}
	s.forwardKmsg(h, p.UpCorr, req)
	p.Reserve = boundReserve(answerReserve + int64(len(kept))*64)
	return Forward, nil
}

func mergeAlterConfigsDropped(resp *kmsg.IncrementalAlterConfigsResponse, refused []refusedResource) {
	for _, t := range refused {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode = t.typ, t.name, t.code
		resp.Resources = append(resp.Resources, rr)
	}
}

func alterConfigsResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.IncrementalAlterConfigsResponse)
	kept := resp.Resources[:0]
	for _, res := range resp.Resources {
		if short, ok := s.configTopicShort(res.ResourceType, res.ResourceName); ok {
			res.ResourceName = short
			kept = append(kept, res)
		}
	}
	resp.Resources = kept
	mergeAlterConfigsDropped(resp, p.refused.resources)
	s.answerKmsg(p, resp)
	return nil
}
