package decide

// ListGroups (key 16), versions 0-5: a receive operation opens groups
// (GROUP_AUTHORIZATION_FAILED otherwise); the answer lists the tenant's
// groups only (<prefix><tenant>.~g.*), by their short names; every other
// group of the broker is left out (N2, D6).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(16, 0, 5, listGroupsRequest, listGroupsResponse) }

func listGroupsRequest(s *Session, h *codec.RequestHeader, req *kmsg.ListGroupsRequest, p *Pending) Outcome {
	if code := s.refuseGroups(); code != 0 {
		return refuse(s, p, code, func(r *kmsg.ListGroupsResponse) { r.ErrorCode = code })
	}
	p.Reserve = groupReserve
	return s.forward(h, p, req)
}

func listGroupsResponse(s *Session, p *Pending, resp *kmsg.ListGroupsResponse) {
	resp.Groups = mapBack(resp.Groups, func(g *kmsg.ListGroupsResponseGroup) *string { return &g.Group }, s.groupShort)
}
