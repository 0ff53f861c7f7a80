package decide

// SyncGroup (key 14), versions 0-5: a receive operation opens groups
// (GROUP_AUTHORIZATION_FAILED otherwise); the group id is mapped (N1). With
// the consumer protocol, the leader's assignments are mapped to the
// physical names, and the member's assignment in the answer back to the
// short names, the topics outside the view left out (N2).
//
// Before v5 neither the request nor the answer says the protocol type (and
// the session keeps no memory of the JoinGroup before): there an assignment
// is read as the consumer protocol's only when it is exactly one — kmsg
// decodes it (version 0-3) and writes back the very same bytes — else it
// crosses as it is. Both directions judge the same way, so a mapping done
// going in is undone coming out. From v5 the protocol type decides; a
// consumer assignment the gateway cannot read disconnects the leader, and
// is replaced by an empty one in an answer.

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { reg(14, Served, 0, 5, syncGroupRequest, syncGroupResponse) }

func syncGroupRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed SyncGroup"
		return Disconnect, nil
	}
	req := r.(*kmsg.SyncGroupRequest)
	group, ok := s.groupName(req.Group)
	code := s.refuseGroups()
	if code == 0 && !ok {
		code = kerr.InvalidGroupID.Code
	}
	if code != 0 {
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.Version = h.Version
		resp.ErrorCode = code
		resp.ProtocolType, resp.Protocol = req.ProtocolType, req.Protocol
		s.answerKmsg(p, resp)
		p.Cause = causeOf(code)
		return Answer, nil
	}
	req.Group = group
	known := req.ProtocolType != nil
	consumer := known && isConsumer(*req.ProtocolType)
	for i := range req.GroupAssignment {
		a := &req.GroupAssignment[i]
		switch {
		case len(a.MemberAssignment) == 0:
		case consumer:
			out, ok := mapAssignment(a.MemberAssignment, s.toPhysical, false)
			if !ok {
				p.Cause = "malformed consumer assignment in SyncGroup"
				return Disconnect, nil
			}
			a.MemberAssignment = out
		case !known:
			if out, ok := mapAssignment(a.MemberAssignment, s.toPhysical, true); ok {
				a.MemberAssignment = out
			}
		}
	}
	s.forwardKmsg(h, p.UpCorr, req)
	p.Reserve = answerReserve + groupReserve/4
	return Forward, nil
}

func syncGroupResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.SyncGroupResponse)
	switch {
	case len(resp.MemberAssignment) == 0:
	case resp.ProtocolType != nil:
		if isConsumer(*resp.ProtocolType) {
			resp.MemberAssignment = s.assignmentBack(resp.MemberAssignment)
		}
	default:
		if out, ok := mapAssignment(resp.MemberAssignment, s.toShort, true); ok {
			resp.MemberAssignment = out
		}
	}
	s.answerKmsg(p, resp)
	return nil
}
