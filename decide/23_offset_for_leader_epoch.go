package decide

// OffsetForLeaderEpoch (key 23), versions 2-4: a receive operation opens a
// topic; a consumer's request (ReplicaID -1).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { reg(23, Served, 2, 4, offsetForLeaderEpochRequest, offsetForLeaderEpochResponse) }

func offsetForLeaderEpochRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed OffsetForLeaderEpoch"
		return Disconnect, nil
	}
	req := r.(*kmsg.OffsetForLeaderEpochRequest)
	req.ReplicaID = -1
	req.Topics = keepReceiveTopics(s.View, req.Topics,
		func(t *kmsg.OffsetForLeaderEpochRequestTopic) *string { return &t.Topic },
		func(t *kmsg.OffsetForLeaderEpochRequestTopic) []int32 {
			ps := make([]int32, 0, len(t.Partitions))
			for _, p := range t.Partitions {
				ps = append(ps, p.Partition)
			}
			return ps
		}, &p.refused)
	p.Reserve = answerReserve
	if len(req.Topics) == 0 {
		resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
		resp.Version = h.Version
		mergeEpochDropped(resp, p.refused.topics)
		s.answerKmsg(p, resp)
		return Answer, nil
	}
	s.forwardKmsg(h, p.UpCorr, req)
	return Forward, nil
}

func mergeEpochDropped(resp *kmsg.OffsetForLeaderEpochResponse, refused []refusal) {
	for _, t := range refused {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.name
		for _, part := range t.partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = part
			rp.ErrorCode = t.code
			rp.LeaderEpoch, rp.EndOffset = -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
}

func offsetForLeaderEpochResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.OffsetForLeaderEpochResponse)
	kept := resp.Topics[:0]
	for _, t := range resp.Topics {
		if short, ok := s.View.Short(t.Topic); ok {
			t.Topic = short
			kept = append(kept, t)
		}
	}
	resp.Topics = kept
	mergeEpochDropped(resp, p.refused.topics)
	s.answerKmsg(p, resp)
	return nil
}
