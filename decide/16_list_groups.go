package decide

// ListGroups (key 16), versions 0-5: a receive operation opens groups
// (GROUP_AUTHORIZATION_FAILED otherwise); the answer lists the tenant's
// groups only (<prefix><tenant>.~g.*), by their short names; every other
// group of the broker is left out (N2, D6).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { reg(16, Served, 0, 5, listGroupsRequest, listGroupsResponse) }

func listGroupsRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed ListGroups"
		return Disconnect, nil
	}
	if code := s.refuseGroups(); code != 0 {
		resp := kmsg.NewPtrListGroupsResponse()
		resp.Version = h.Version
		resp.ErrorCode = code
		s.answerKmsg(p, resp)
		p.Cause = causeOf(code)
		return Answer, nil
	}
	s.forwardKmsg(h, p.UpCorr, r)
	p.Reserve = groupReserve
	return Forward, nil
}

func listGroupsResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.ListGroupsResponse)
	kept := resp.Groups[:0]
	for _, g := range resp.Groups {
		if short, ok := s.groupShort(g.Group); ok {
			g.Group = short
			kept = append(kept, g)
		}
	}
	resp.Groups = kept
	s.answerKmsg(p, resp)
	return nil
}
