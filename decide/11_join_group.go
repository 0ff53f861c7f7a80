package decide

// JoinGroup (key 11), versions 0-9: a receive operation opens groups
// (GROUP_AUTHORIZATION_FAILED otherwise); the group id is mapped (N1). With
// the consumer protocol, each protocol's member metadata (a subscription)
// is mapped to the physical names, the topics outside the view left out;
// in the answer the members' subscriptions, which the leader reads, are
// mapped back (N2). Other protocol types cross as they are (see groups.go).
// A consumer subscription the gateway cannot read disconnects.

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(11, 0, 9, joinGroupRequest, joinGroupResponse) }

func joinGroupRequest(s *Session, h *codec.RequestHeader, req *kmsg.JoinGroupRequest, p *Pending) Outcome {
	group, code := s.group(req.Group)
	if code != 0 {
		return refuse(s, p, code, func(r *kmsg.JoinGroupResponse) {
			r.ErrorCode, r.Generation = code, -1
			if h.Version < 7 {
				r.Protocol = kmsg.StringPtr("")
			}
		})
	}
	req.Group = group
	if isConsumer(req.ProtocolType) {
		p.consumer = true
		for i := range req.Protocols {
			meta, ok := mapSubscription(req.Protocols[i].Metadata, s.toPhysical)
			if !ok {
				p.Cause = "malformed consumer subscription in JoinGroup"
				return Disconnect
			}
			req.Protocols[i].Metadata = meta
		}
	}
	p.Reserve = groupReserve
	return s.forward(h, p, req)
}

func joinGroupResponse(s *Session, p *Pending, resp *kmsg.JoinGroupResponse) {
	consumer := p.consumer
	if resp.ProtocolType != nil {
		consumer = isConsumer(*resp.ProtocolType)
	}
	if consumer {
		for i := range resp.Members {
			resp.Members[i].ProtocolMetadata = s.subscriptionBack(resp.Members[i].ProtocolMetadata)
		}
	}
}
