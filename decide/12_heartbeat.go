package decide

// Heartbeat (key 12), versions 0-4: a receive operation opens groups
// (GROUP_AUTHORIZATION_FAILED otherwise); the group id is mapped (D6, N1).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(12, 0, 4, heartbeatRequest, pass[*kmsg.HeartbeatResponse]) }

func heartbeatRequest(s *Session, h *codec.RequestHeader, req *kmsg.HeartbeatRequest, p *Pending) Outcome {
	group, code := s.group(req.Group)
	if code != 0 {
		return refuse(s, p, code, func(r *kmsg.HeartbeatResponse) { r.ErrorCode = code })
	}
	req.Group = group
	p.Reserve = AnswerReserve
	return s.forward(h, p, req)
}
