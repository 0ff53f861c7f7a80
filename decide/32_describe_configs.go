package decide

// DescribeConfigs (key 32), versions 0-4: topic resources of administrable
// topics only (TOPIC_AUTHORIZATION_FAILED otherwise); never a broker
// resource (CLUSTER_AUTHORIZATION_FAILED; GROUP_AUTHORIZATION_FAILED for a
// group's). Synonyms and documentation (the broker's own settings) are
// never asked for, and never shown. Names mapped both ways; refused
// resources answered by the gateway (see admin.go).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { reg(32, Served, 0, 4, describeConfigsRequest, describeConfigsResponse) }

func describeConfigsRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed DescribeConfigs"
		return Disconnect, nil
	}
	req := r.(*kmsg.DescribeConfigsRequest)
	kept := req.Resources[:0]
	for _, res := range req.Resources {
		phys, code := s.configResource(res.ResourceType, res.ResourceName)
		if code != 0 {
			p.refused.resource(res.ResourceType, res.ResourceName, code)
			continue
		}
		res.ResourceName = phys
		kept = append(kept, res)
	}
	req.Resources = kept
	req.IncludeSynonyms = false
	req.IncludeDocumentation = false
	if adminTooManyRefused(p, "DescribeConfigs") {
		return Disconnect, nil
	}
	if len(kept) == 0 {
		resp := kmsg.NewPtrDescribeConfigsResponse()
		resp.Version = h.Version
		mergeDescribeConfigsDropped(resp, p.refused.resources)
		s.answerKmsg(p, resp)
		p.Cause = adminCause(p)
		return Answer, nil
	}
	s.forwardKmsg(h, p.UpCorr, req)
	p.Reserve = adminReserveFor(len(kept))
	return Forward, nil
}

func mergeDescribeConfigsDropped(resp *kmsg.DescribeConfigsResponse, refused []refusedResource) {
	for _, t := range refused {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode = t.typ, t.name, t.code
		resp.Resources = append(resp.Resources, rr)
	}
}

func describeConfigsResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.DescribeConfigsResponse)
	kept := resp.Resources[:0]
	for _, res := range resp.Resources {
		short, ok := s.configTopicShort(res.ResourceType, res.ResourceName)
		if !ok {
			continue
		}
		res.ResourceName = short
		for i := range res.Configs {
			c := &res.Configs[i]
			c.ConfigSynonyms = nil
			c.Documentation = nil
		}
		kept = append(kept, res)
	}
	resp.Resources = kept
	mergeDescribeConfigsDropped(resp, p.refused.resources)
	s.answerKmsg(p, resp)
	return nil
}
