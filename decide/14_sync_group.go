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
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(14, 0, 5, syncGroupRequest, syncGroupResponse) }

func syncGroupRequest(s *Session, h *codec.RequestHeader, req *kmsg.SyncGroupRequest, p *Pending) Outcome {
	group, code := s.group(req.Group)
	if code != 0 {
		return refuse(s, p, code, func(r *kmsg.SyncGroupResponse) {
			r.ErrorCode = code
			r.ProtocolType, r.Protocol = req.ProtocolType, req.Protocol
		})
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
				return Disconnect
			}
			a.MemberAssignment = out
		case !known:
			if out, ok := mapAssignment(a.MemberAssignment, s.toPhysical, true); ok {
				a.MemberAssignment = out
			}
		}
	}
	p.Reserve = AnswerReserve + groupReserve/4
	return s.forward(h, p, req)
}

func syncGroupResponse(s *Session, p *Pending, resp *kmsg.SyncGroupResponse) {
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
}
