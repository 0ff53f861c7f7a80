package decide

// DeleteGroups (key 42), versions 0-3: the tenant's groups are
// administered by a token carrying the admin_scope of one of the view's
// receive operations (GROUP_AUTHORIZATION_FAILED for each group
// otherwise; see admin.go); group ids mapped into <prefix><tenant>.~g.
// and back, a broker's group outside that namespace never shown.

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { reg(42, Served, 0, 3, deleteGroupsRequest, deleteGroupsResponse) }

func deleteGroupsRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed DeleteGroups"
		return Disconnect, nil
	}
	req := r.(*kmsg.DeleteGroupsRequest)
	kept := req.Groups[:0]
	for _, g := range req.Groups {
		code := int16(0)
		name, ok := s.groupName(g)
		switch {
		case !s.View.CanAdminGroups:
			code = kerr.GroupAuthorizationFailed.Code
		case !ok:
			code = kerr.InvalidGroupID.Code
		}
		if code != 0 {
			p.refused.group(g, code)
			continue
		}
		kept = append(kept, name)
	}
	req.Groups = kept
	if adminTooManyRefused(p, "DeleteGroups") {
		return Disconnect, nil
	}
	if len(kept) == 0 {
		resp := kmsg.NewPtrDeleteGroupsResponse()
		resp.Version = h.Version
		mergeDeleteGroupsDropped(resp, p.refused.groups)
		s.answerKmsg(p, resp)
		p.Cause = adminCause(p)
		return Answer, nil
	}
	s.forwardKmsg(h, p.UpCorr, req)
	p.Reserve = boundReserve(answerReserve + int64(len(kept))*64)
	return Forward, nil
}

func mergeDeleteGroupsDropped(resp *kmsg.DeleteGroupsResponse, refused []refusal) {
	for _, g := range refused {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group, rg.ErrorCode = g.name, g.code
		resp.Groups = append(resp.Groups, rg)
	}
}

func deleteGroupsResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.DeleteGroupsResponse)
	kept := resp.Groups[:0]
	for _, g := range resp.Groups {
		if short, ok := s.groupShort(g.Group); ok {
			g.Group = short
			kept = append(kept, g)
		}
	}
	resp.Groups = kept
	mergeDeleteGroupsDropped(resp, p.refused.groups)
	s.answerKmsg(p, resp)
	return nil
}
