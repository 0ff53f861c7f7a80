package decide

// ListOffsets (key 2), versions 1-10: a receive operation opens a topic;
// a consumer's request (ReplicaID -1); refused topics answered by the
// gateway, merged into the broker's answer.

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { reg(2, Served, 1, 10, listOffsetsRequest, listOffsetsResponse) }

func listOffsetsRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed ListOffsets"
		return Disconnect, nil
	}
	req := r.(*kmsg.ListOffsetsRequest)
	req.ReplicaID = -1
	req.Topics = keepReceiveTopics(s.View, req.Topics,
		func(t *kmsg.ListOffsetsRequestTopic) *string { return &t.Topic },
		func(t *kmsg.ListOffsetsRequestTopic) []int32 {
			ps := make([]int32, 0, len(t.Partitions))
			for _, p := range t.Partitions {
				ps = append(ps, p.Partition)
			}
			return ps
		}, &p.refused)
	p.Reserve = answerReserve
	if len(req.Topics) == 0 {
		resp := kmsg.NewPtrListOffsetsResponse()
		resp.Version = h.Version
		mergeListOffsetsDropped(resp, p.refused.topics)
		s.answerKmsg(p, resp)
		return Answer, nil
	}
	s.forwardKmsg(h, p.UpCorr, req)
	return Forward, nil
}

func mergeListOffsetsDropped(resp *kmsg.ListOffsetsResponse, refused []refusal) {
	for _, t := range refused {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.name
		for _, part := range t.partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = part
			rp.ErrorCode = t.code
			rp.Offset, rp.Timestamp, rp.LeaderEpoch = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
}

func listOffsetsResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.ListOffsetsResponse)
	kept := resp.Topics[:0]
	for _, t := range resp.Topics {
		if short, ok := s.View.Short(t.Topic); ok {
			t.Topic = short
			kept = append(kept, t)
		}
	}
	resp.Topics = kept
	mergeListOffsetsDropped(resp, p.refused.topics)
	s.answerKmsg(p, resp)
	return nil
}
