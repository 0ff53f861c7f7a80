package decide

// DeleteGroups (key 42), versions 0-3: the tenant's groups are
// administered by a token carrying the admin_scope of one of the view's
// receive operations (GROUP_AUTHORIZATION_FAILED for each group
// otherwise; see admin.go); group ids mapped into <prefix><tenant>.~g.
// and back, a broker's group outside that namespace never shown.

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(42, 0, 3, deleteGroupsRequest, deleteGroupsResponse) }

func deleteGroupsRequest(s *Session, h *codec.RequestHeader, req *kmsg.DeleteGroupsRequest, p *Pending) Outcome {
	req.Groups = keep(req.Groups, func(g *string) bool {
		name, code := s.adminGroup(*g)
		if code != 0 {
			p.refused.group(*g, code)
			return false
		}
		*g = name
		return true
	})
	return forwardAdmin(s, h, p, req, len(req.Groups) == 0, boundReserve(AnswerReserve+int64(len(req.Groups))*64), deleteGroupsResponse)
}

func deleteGroupsResponse(s *Session, p *Pending, resp *kmsg.DeleteGroupsResponse) {
	resp.Groups = mapBack(resp.Groups, func(g *kmsg.DeleteGroupsResponseGroup) *string { return &g.Group }, s.groupShort)
	resp.Groups = appendEach(resp.Groups, p.refused.groups, func(r *refusal) kmsg.DeleteGroupsResponseGroup {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group, g.ErrorCode = r.name, r.code
		return g
	})
}
