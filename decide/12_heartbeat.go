package decide

// Heartbeat (key 12), versions 0-4: a receive operation opens groups
// (GROUP_AUTHORIZATION_FAILED otherwise); the group id is mapped (D6, N1).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { reg(12, Served, 0, 4, heartbeatRequest, heartbeatResponse) }

func heartbeatRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed Heartbeat"
		return Disconnect, nil
	}
	req := r.(*kmsg.HeartbeatRequest)
	group, ok := s.groupName(req.Group)
	code := s.refuseGroups()
	if code == 0 && !ok {
		code = kerr.InvalidGroupID.Code
	}
	if code != 0 {
		resp := kmsg.NewPtrHeartbeatResponse()
		resp.Version = h.Version
		resp.ErrorCode = code
		s.answerKmsg(p, resp)
		p.Cause = causeOf(code)
		return Answer, nil
	}
	req.Group = group
	s.forwardKmsg(h, p.UpCorr, req)
	p.Reserve = answerReserve
	return Forward, nil
}

func heartbeatResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	s.answerKmsg(p, r)
	return nil
}
