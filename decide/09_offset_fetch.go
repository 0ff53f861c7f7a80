package decide

// OffsetFetch (key 9), versions 0-9 (10 names topics by id); one group in
// v0-v7, a batch of groups from v8: a receive operation opens groups
// (GROUP_AUTHORIZATION_FAILED otherwise); group ids mapped both ways (N1,
// N2); a topic asked needs a receive operation: one outside the view is
// UNKNOWN_TOPIC_OR_PARTITION, one not opened for receive
// TOPIC_AUTHORIZATION_FAILED, answered by the gateway and merged into the
// broker's answer. Null topics (all the group's) are asked of the broker
// and the answer filtered to the view's topics, by short name.

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { reg(9, Served, 0, 9, offsetFetchRequest, offsetFetchResponse) }

func offsetFetchRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed OffsetFetch"
		return Disconnect, nil
	}
	req := r.(*kmsg.OffsetFetchRequest)
	p.Reserve = answerReserve
	if h.Version >= 8 {
		return offsetFetchGroups(s, h, req, p)
	}
	group, ok := s.groupName(req.Group)
	code := s.refuseGroups()
	if code == 0 && !ok {
		code = kerr.InvalidGroupID.Code
	}
	if req.Topics != nil {
		kept := req.Topics[:0]
		for _, t := range req.Topics {
			c := code
			var phys []byte
			if c == 0 {
				phys, c = s.View.FetchTopic([]byte(t.Topic))
			}
			if c != 0 {
				p.refused.topic(t.Topic, c, append([]int32(nil), t.Partitions...))
				continue
			}
			t.Topic = string(phys)
			kept = append(kept, t)
		}
		req.Topics = kept
	}
	if p.refused.tooMany() {
		p.Cause = "OffsetFetch refused for too many partitions"
		return Disconnect, nil
	}
	if code != 0 || (len(req.Topics) == 0 && len(p.refused.topics) > 0) {
		resp := kmsg.NewPtrOffsetFetchResponse()
		resp.Version = h.Version
		resp.ErrorCode = code
		resp.Topics = appendOffsetFetchDropped(resp.Topics, p.refused.topics)
		s.answerKmsg(p, resp)
		if code != 0 {
			p.Cause = causeOf(code)
		}
		return Answer, nil
	}
	req.Group = group
	p.Reserve += int64(len(req.Topics)) * 1024
	if req.Topics == nil {
		p.Reserve += int64(len(s.View.Topics())) * 1024
	}
	p.Reserve = boundReserve(p.Reserve)
	s.forwardKmsg(h, p.UpCorr, req)
	return Forward, nil
}

// offsetFetchGroups judges the batched form (v8+). Refused topics are kept
// per group (see refusals.takeGroup).
func offsetFetchGroups(s *Session, h *codec.RequestHeader, req *kmsg.OffsetFetchRequest, p *Pending) (Outcome, error) {
	code := s.refuseGroups()
	for _, g := range req.Groups {
		if _, ok := s.groupName(g.Group); code == 0 && !ok {
			code = kerr.InvalidGroupID.Code
		}
	}
	if code != 0 {
		resp := kmsg.NewPtrOffsetFetchResponse()
		resp.Version = h.Version
		for _, g := range req.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, code
			resp.Groups = append(resp.Groups, rg)
		}
		s.answerKmsg(p, resp)
		p.Cause = causeOf(code)
		return Answer, nil
	}
	ask := false // something is left to ask of the broker
	for i := range req.Groups {
		g := &req.Groups[i]
		short := g.Group
		g.Group = s.View.GroupName(short)
		if g.Topics == nil {
			ask = true
			p.Reserve += int64(len(s.View.Topics())) * 1024
			continue
		}
		kept := g.Topics[:0]
		marked := false
		for _, t := range g.Topics {
			phys, c := s.View.FetchTopic([]byte(t.Topic))
			if c != 0 {
				if !marked {
					p.refused.openGroup(short)
					marked = true
				}
				p.refused.inGroup(t.Topic, c, append([]int32(nil), t.Partitions...))
				continue
			}
			t.Topic = string(phys)
			kept = append(kept, t)
		}
		ask = ask || len(kept) > 0 || !marked
		g.Topics = kept
		p.Reserve += int64(len(kept)) * 1024
	}
	if p.refused.tooMany() {
		p.Cause = "OffsetFetch refused for too many partitions"
		return Disconnect, nil
	}
	if !ask && len(req.Groups) > 0 {
		resp := kmsg.NewPtrOffsetFetchResponse()
		resp.Version = h.Version
		for _, g := range req.Groups {
			short, _ := s.groupShort(g.Group)
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = short
			rg.Topics = appendOffsetFetchGroupDropped(rg.Topics, p.refused.takeGroup(short))
			resp.Groups = append(resp.Groups, rg)
		}
		s.answerKmsg(p, resp)
		return Answer, nil
	}
	p.Reserve = boundReserve(p.Reserve)
	s.forwardKmsg(h, p.UpCorr, req)
	return Forward, nil
}

func appendOffsetFetchDropped(dst []kmsg.OffsetFetchResponseTopic, ts []refusal) []kmsg.OffsetFetchResponseTopic {
	for _, t := range ts {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.name
		for _, part := range t.partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode = part, t.code
			rp.Offset, rp.LeaderEpoch = -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		dst = append(dst, rt)
	}
	return dst
}

func appendOffsetFetchGroupDropped(dst []kmsg.OffsetFetchResponseGroupTopic, ts []refusal) []kmsg.OffsetFetchResponseGroupTopic {
	for _, t := range ts {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.name
		for _, part := range t.partitions {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.ErrorCode = part, t.code
			rp.Offset, rp.LeaderEpoch = -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		dst = append(dst, rt)
	}
	return dst
}

func offsetFetchResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.OffsetFetchResponse)
	if p.Version < 8 {
		kept := resp.Topics[:0]
		for _, t := range resp.Topics {
			if short, ok := s.View.Short(t.Topic); ok {
				t.Topic = short
				kept = append(kept, t)
			}
		}
		resp.Topics = appendOffsetFetchDropped(kept, p.refused.topics)
		s.answerKmsg(p, resp)
		return nil
	}
	groups := resp.Groups[:0]
	for _, g := range resp.Groups {
		short, ok := s.groupShort(g.Group)
		if !ok {
			continue // not the tenant's: never shown
		}
		g.Group = short
		kept := g.Topics[:0]
		for _, t := range g.Topics {
			if name, ok := s.View.Short(t.Topic); ok {
				t.Topic = name
				kept = append(kept, t)
			}
		}
		g.Topics = appendOffsetFetchGroupDropped(kept, p.refused.takeGroup(short))
		groups = append(groups, g)
	}
	resp.Groups = groups
	s.answerKmsg(p, resp)
	return nil
}
