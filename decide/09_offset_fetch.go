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

func init() { serve(9, 0, 9, offsetFetchRequest, offsetFetchResponse) }

func offsetFetchRequest(s *Session, h *codec.RequestHeader, req *kmsg.OffsetFetchRequest, p *Pending) Outcome {
	p.Reserve = AnswerReserve
	if h.Version >= 8 {
		return offsetFetchGroups(s, h, req, p)
	}
	group, code := s.group(req.Group)
	// Null topics (all the group's) stay null.
	req.Topics = keepTopics(req.Topics,
		func(t *kmsg.OffsetFetchRequestTopic) *string { return &t.Topic },
		func(t *kmsg.OffsetFetchRequestTopic) []int32 { return append([]int32(nil), t.Partitions...) },
		unless(code, s.receiveTopic), p.refused.topic)
	if p.refused.tooMany() {
		p.Cause = "OffsetFetch refused for too many partitions"
		return Disconnect
	}
	if code != 0 || (len(req.Topics) == 0 && len(p.refused.topics) > 0) {
		if code != 0 {
			p.Cause = causeOf(code)
		}
		return answer(s, p, func(r *kmsg.OffsetFetchResponse) {
			r.ErrorCode = code
			r.Topics = appendOffsetFetchRefused(r.Topics, p.refused.topics)
		})
	}
	req.Group = group
	p.Reserve += int64(len(req.Topics)) * 1024
	if req.Topics == nil {
		p.Reserve += int64(len(s.View.Topics())) * 1024
	}
	p.Reserve = boundReserve(p.Reserve)
	return s.forward(h, p, req)
}

// offsetFetchGroups judges the batched form (v8+). Refused topics are kept
// per group (see refusals.takeGroup).
func offsetFetchGroups(s *Session, h *codec.RequestHeader, req *kmsg.OffsetFetchRequest, p *Pending) Outcome {
	code := s.refuseGroups()
	for _, g := range req.Groups {
		if _, ok := s.groupName(g.Group); code == 0 && !ok {
			code = kerr.InvalidGroupID.Code
		}
	}
	if code != 0 {
		return refuse(s, p, code, func(r *kmsg.OffsetFetchResponse) {
			for _, g := range req.Groups {
				rg := kmsg.NewOffsetFetchResponseGroup()
				rg.Group, rg.ErrorCode = g.Group, code
				r.Groups = append(r.Groups, rg)
			}
		})
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
		marked := false
		g.Topics = keepTopics(g.Topics,
			func(t *kmsg.OffsetFetchRequestGroupTopic) *string { return &t.Topic },
			func(t *kmsg.OffsetFetchRequestGroupTopic) []int32 { return append([]int32(nil), t.Partitions...) },
			s.receiveTopic, func(name string, code int16, partitions []int32) {
				if !marked {
					p.refused.openGroup(short)
					marked = true
				}
				p.refused.inGroup(name, code, partitions)
			})
		ask = ask || len(g.Topics) > 0 || !marked
		p.Reserve += int64(len(g.Topics)) * 1024
	}
	if p.refused.tooMany() {
		p.Cause = "OffsetFetch refused for too many partitions"
		return Disconnect
	}
	if !ask && len(req.Groups) > 0 {
		return answer(s, p, func(r *kmsg.OffsetFetchResponse) {
			for _, g := range req.Groups {
				short, _ := s.groupShort(g.Group)
				rg := kmsg.NewOffsetFetchResponseGroup()
				rg.Group = short
				rg.Topics = appendOffsetFetchGroupRefused(rg.Topics, p.refused.takeGroup(short))
				r.Groups = append(r.Groups, rg)
			}
		})
	}
	p.Reserve = boundReserve(p.Reserve)
	return s.forward(h, p, req)
}

func appendOffsetFetchRefused(dst []kmsg.OffsetFetchResponseTopic, refused []refusal) []kmsg.OffsetFetchResponseTopic {
	return appendRefused(dst, refused,
		func(name string, ps []kmsg.OffsetFetchResponseTopicPartition) kmsg.OffsetFetchResponseTopic {
			t := kmsg.NewOffsetFetchResponseTopic()
			t.Topic, t.Partitions = name, ps
			return t
		},
		func(partition int32, code int16) kmsg.OffsetFetchResponseTopicPartition {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode = partition, code
			rp.Offset, rp.LeaderEpoch = -1, -1
			return rp
		})
}

func appendOffsetFetchGroupRefused(dst []kmsg.OffsetFetchResponseGroupTopic, refused []refusal) []kmsg.OffsetFetchResponseGroupTopic {
	return appendRefused(dst, refused,
		func(name string, ps []kmsg.OffsetFetchResponseGroupTopicPartition) kmsg.OffsetFetchResponseGroupTopic {
			t := kmsg.NewOffsetFetchResponseGroupTopic()
			t.Topic, t.Partitions = name, ps
			return t
		},
		func(partition int32, code int16) kmsg.OffsetFetchResponseGroupTopicPartition {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.ErrorCode = partition, code
			rp.Offset, rp.LeaderEpoch = -1, -1
			return rp
		})
}

func offsetFetchResponse(s *Session, p *Pending, resp *kmsg.OffsetFetchResponse) {
	if p.Version < 8 {
		resp.Topics = mapBack(resp.Topics, func(t *kmsg.OffsetFetchResponseTopic) *string { return &t.Topic }, s.toShort)
		resp.Topics = appendOffsetFetchRefused(resp.Topics, p.refused.topics)
		return
	}
	resp.Groups = mapBack(resp.Groups, func(g *kmsg.OffsetFetchResponseGroup) *string { return &g.Group }, s.groupShort)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		g.Topics = mapBack(g.Topics, func(t *kmsg.OffsetFetchResponseGroupTopic) *string { return &t.Topic }, s.toShort)
		g.Topics = appendOffsetFetchGroupRefused(g.Topics, p.refused.takeGroup(g.Group))
	}
}
