package decide

// OffsetCommit (key 8), versions 0-9 (10 names topics by id): a receive
// operation opens groups (GROUP_AUTHORIZATION_FAILED on every partition
// otherwise); the group id is mapped (N1); a topic needs a receive
// operation: one outside the view is UNKNOWN_TOPIC_OR_PARTITION, one not
// opened for receive TOPIC_AUTHORIZATION_FAILED, answered by the gateway
// and merged into the broker's answer; the answer's topics mapped back (N2).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { reg(8, Served, 0, 9, offsetCommitRequest, offsetCommitResponse) }

func offsetCommitRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed OffsetCommit"
		return Disconnect, nil
	}
	req := r.(*kmsg.OffsetCommitRequest)
	group, ok := s.groupName(req.Group)
	code := s.refuseGroups()
	if code == 0 && !ok {
		code = kerr.InvalidGroupID.Code
	}
	kept := req.Topics[:0]
	for _, t := range req.Topics {
		c := code
		var phys []byte
		if c == 0 {
			phys, c = s.View.FetchTopic([]byte(t.Topic))
		}
		if c != 0 {
			var parts []int32
			for _, pp := range t.Partitions {
				parts = append(parts, pp.Partition)
			}
			p.refused.topic(t.Topic, c, parts)
			continue
		}
		t.Topic = string(phys)
		kept = append(kept, t)
	}
	req.Topics = kept
	p.Reserve = answerReserve
	if code != 0 || (len(kept) == 0 && len(p.refused.topics) > 0) {
		resp := kmsg.NewPtrOffsetCommitResponse()
		resp.Version = h.Version
		mergeOffsetCommitDropped(resp, p.refused.topics)
		s.answerKmsg(p, resp)
		if code != 0 {
			p.Cause = causeOf(code)
		}
		return Answer, nil
	}
	req.Group = group
	s.forwardKmsg(h, p.UpCorr, req)
	return Forward, nil
}

func mergeOffsetCommitDropped(resp *kmsg.OffsetCommitResponse, refused []refusal) {
	for _, t := range refused {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.name
		for _, part := range t.partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = part, t.code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
}

func offsetCommitResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.OffsetCommitResponse)
	kept := resp.Topics[:0]
	for _, t := range resp.Topics {
		if short, ok := s.View.Short(t.Topic); ok {
			t.Topic = short
			kept = append(kept, t)
		}
	}
	resp.Topics = kept
	mergeOffsetCommitDropped(resp, p.refused.topics)
	s.answerKmsg(p, resp)
	return nil
}
