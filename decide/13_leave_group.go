package decide

// LeaveGroup (key 13), versions 0-5 (v3+ a batch of members): a receive
// operation opens groups (GROUP_AUTHORIZATION_FAILED otherwise); the group
// id is mapped (D6, N1). Member and instance ids cross unchanged.

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { reg(13, Served, 0, 5, leaveGroupRequest, leaveGroupResponse) }

func leaveGroupRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed LeaveGroup"
		return Disconnect, nil
	}
	req := r.(*kmsg.LeaveGroupRequest)
	group, ok := s.groupName(req.Group)
	code := s.refuseGroups()
	if code == 0 && !ok {
		code = kerr.InvalidGroupID.Code
	}
	if code != 0 {
		resp := kmsg.NewPtrLeaveGroupResponse()
		resp.Version = h.Version
		resp.ErrorCode = code
		s.answerKmsg(p, resp)
		p.Cause = causeOf(code)
		return Answer, nil
	}
	req.Group = group
	s.forwardKmsg(h, p.UpCorr, req)
	p.Reserve = boundReserve(answerReserve + int64(len(req.Members))*256)
	return Forward, nil
}

func leaveGroupResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	s.answerKmsg(p, r)
	return nil
}
