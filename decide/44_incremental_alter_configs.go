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

func init() { serve(44, 0, 1, alterConfigsRequest, alterConfigsResponse) }

func alterConfigsRequest(s *Session, h *codec.RequestHeader, req *kmsg.IncrementalAlterConfigsRequest, p *Pending) Outcome {
	req.Resources = keep(req.Resources, func(res *kmsg.IncrementalAlterConfigsRequestResource) bool {
		return s.judgeResource(p, res.ResourceType, &res.ResourceName, func() int16 {
			for i := range res.Configs {
				if !s.alterConfig(&res.Configs[i]) {
					return kerr.PolicyViolation.Code
				}
			}
			return 0
		})
	})
	return forwardAdmin(s, h, p, req, len(req.Resources) == 0, boundReserve(AnswerReserve+int64(len(req.Resources))*64), alterConfigsResponse)
}

func alterConfigsResponse(s *Session, p *Pending, resp *kmsg.IncrementalAlterConfigsResponse) {
	resp.Resources = keep(resp.Resources, func(res *kmsg.IncrementalAlterConfigsResponseResource) bool {
		return s.configTopicShort(res.ResourceType, &res.ResourceName)
	})
	resp.Resources = appendEach(resp.Resources, p.refused.resources, func(r *refusedResource) kmsg.IncrementalAlterConfigsResponseResource {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode = r.typ, r.name, r.code
		return rr
	})
}
