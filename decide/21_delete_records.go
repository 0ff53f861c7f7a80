package decide

// DeleteRecords (key 21), versions 0-2: an administrable topic only
// (TOPIC_AUTHORIZATION_FAILED otherwise, as Kafka answers a client without
// DELETE on it). Names mapped both ways; refused partitions answered by
// the gateway (see admin.go).

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { reg(21, Served, 0, 2, deleteRecordsRequest, deleteRecordsResponse) }

func deleteRecordsRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	r, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed DeleteRecords"
		return Disconnect, nil
	}
	req := r.(*kmsg.DeleteRecordsRequest)
	kept := req.Topics[:0]
	for _, t := range req.Topics {
		phys, code := s.View.AdminTopic(t.Topic, kerr.TopicAuthorizationFailed.Code)
		if code != 0 {
			var parts []int32
			for _, pp := range t.Partitions {
				parts = append(parts, pp.Partition)
			}
			p.refused.topic(t.Topic, code, parts)
			continue
		}
		t.Topic = phys
		kept = append(kept, t)
	}
	req.Topics = kept
	if adminTooManyRefused(p, "DeleteRecords") {
		return Disconnect, nil
	}
	if len(kept) == 0 {
		resp := kmsg.NewPtrDeleteRecordsResponse()
		resp.Version = h.Version
		mergeDeleteRecordsDropped(resp, p.refused.topics)
		s.answerKmsg(p, resp)
		p.Cause = adminCause(p)
		return Answer, nil
	}
	s.forwardKmsg(h, p.UpCorr, req)
	p.Reserve = answerReserve
	for _, t := range kept {
		p.Reserve += 64 + int64(len(t.Partitions))*16
	}
	p.Reserve = boundReserve(p.Reserve)
	return Forward, nil
}

func mergeDeleteRecordsDropped(resp *kmsg.DeleteRecordsResponse, refused []refusal) {
	for _, t := range refused {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.name
		for _, part := range t.partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark, rp.ErrorCode = part, -1, t.code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
}

func deleteRecordsResponse(s *Session, p *Pending, body []byte) error {
	r, err := decodeResponse(p, body)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.DeleteRecordsResponse)
	kept := resp.Topics[:0]
	for _, t := range resp.Topics {
		if short, ok := s.View.Short(t.Topic); ok {
			t.Topic = short
			kept = append(kept, t)
		}
	}
	resp.Topics = kept
	mergeDeleteRecordsDropped(resp, p.refused.topics)
	s.answerKmsg(p, resp)
	return nil
}
