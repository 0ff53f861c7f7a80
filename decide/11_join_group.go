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
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { reg(11, Served, 0, 9, joinGroupRequest, joinGroupResponse) }

func joinGroupRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed JoinGroup"
		return Disconnect, nil
	}
	req := r.(*kmsg.JoinGroupRequest)
	group, ok := s.groupName(req.Group)
	code := s.refuseGroups()
	if code == 0 && !ok {
		code = kerr.InvalidGroupID.Code
	}
	if code != 0 {
		resp := kmsg.NewPtrJoinGroupResponse()
		resp.Version = h.Version
		resp.ErrorCode, resp.Generation = code, -1
		if h.Version < 7 {
			resp.Protocol = kmsg.StringPtr("")
		}
		s.answerKmsg(p, resp)
		p.Cause = causeOf(code)
		return Answer, nil
	}
	req.Group = group
	if isConsumer(req.ProtocolType) {
		p.consumer = true
		for i := range req.Protocols {
			meta, ok := mapSubscription(req.Protocols[i].Metadata, s.toPhysical)
			if !ok {
				p.Cause = "malformed consumer subscription in JoinGroup"
				return Disconnect, nil
			}
			req.Protocols[i].Metadata = meta
		}
	}
	s.forwardKmsg(h, p.UpCorr, req)
	p.Reserve = groupReserve
	return Forward, nil
}

func joinGroupResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.JoinGroupResponse)
	consumer := p.consumer
	if resp.ProtocolType != nil {
		consumer = isConsumer(*resp.ProtocolType)
	}
	if consumer {
		for i := range resp.Members {
			resp.Members[i].ProtocolMetadata = s.subscriptionBack(resp.Members[i].ProtocolMetadata)
		}
	}
	s.answerKmsg(p, resp)
	return nil
}
