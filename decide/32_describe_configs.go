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

func init() { serve(32, 0, 4, describeConfigsRequest, describeConfigsResponse) }

func describeConfigsRequest(s *Session, h *codec.RequestHeader, req *kmsg.DescribeConfigsRequest, p *Pending) Outcome {
	req.Resources = keep(req.Resources, func(res *kmsg.DescribeConfigsRequestResource) bool {
		return s.judgeResource(p, res.ResourceType, &res.ResourceName, nil)
	})
	req.IncludeSynonyms = false
	req.IncludeDocumentation = false
	return forwardAdmin(s, h, p, req, len(req.Resources) == 0, adminReserveFor(len(req.Resources)), describeConfigsResponse)
}

func describeConfigsResponse(s *Session, p *Pending, resp *kmsg.DescribeConfigsResponse) {
	resp.Resources = keep(resp.Resources, func(res *kmsg.DescribeConfigsResponseResource) bool {
		if !s.configTopicShort(res.ResourceType, &res.ResourceName) {
			return false
		}
		for i := range res.Configs {
			c := &res.Configs[i]
			c.ConfigSynonyms = nil
			c.Documentation = nil
		}
		return true
	})
	resp.Resources = appendEach(resp.Resources, p.refused.resources, func(r *refusedResource) kmsg.DescribeConfigsResponseResource {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode = r.typ, r.name, r.code
		return rr
	})
}
