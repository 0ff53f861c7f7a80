package decide

// LeaveGroup (key 13), versions 0-5 (v3+ a batch of members): a receive
// operation opens groups (GROUP_AUTHORIZATION_FAILED otherwise); the group
// id is mapped (D6, N1). Member and instance ids cross unchanged.

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(13, 0, 5, leaveGroupRequest, pass[*kmsg.LeaveGroupResponse]) }

func leaveGroupRequest(s *Session, h *codec.RequestHeader, req *kmsg.LeaveGroupRequest, p *Pending) Outcome {
	group, code := s.group(req.Group)
	if code != 0 {
		return refuse(s, p, code, func(r *kmsg.LeaveGroupResponse) { r.ErrorCode = code })
	}
	req.Group = group
	p.Reserve = boundReserve(AnswerReserve + int64(len(req.Members))*256)
	return s.forward(h, p, req)
}
