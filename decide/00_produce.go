package decide

// Produce (key 0), versions 0-12 (13 names topics by id): a send operation
// opens a topic (TOPIC_AUTHORIZATION_FAILED otherwise; UNKNOWN_TOPIC_OR_PARTITION
// for a topic the view does not hold). Record batches are never decoded:
// codec rewrites the head and references the batches (D4). A request with
// refused topics is forwarded without them and their codes are merged into
// the broker's answer; if nothing is left, the gateway answers alone.
// acks=0 has no answer, whatever the verdict.

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// answerReserve is the bytes reserved for an answer that carries no records.
const answerReserve = 4 << 10

func init() { reg(0, Served, 0, 12, produceRequest, produceResponse) }

func produceRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) (Outcome, error) {
	info, err := s.RW.Produce(h, p.UpCorr, s.cid, body, s.View)
	if err != nil {
		p.Cause = "malformed Produce: " + err.Error()
		return Disconnect, nil
	}
	if info.Transactional && !s.View.Transactions {
		// A transactional Produce of a session without transactions: the
		// broker would refuse it for want of InitProducerId anyway; answer
		// for every topic without asking.
		return produceRefuseAll(s, h, body, p, 53) // TRANSACTIONAL_ID_AUTHORIZATION_FAILED
	}
	p.NoResponse = info.Acks == 0
	p.Dropped = s.RW.Dropped.Clone()
	p.Reserve = answerReserve
	if info.Kept == 0 {
		if p.NoResponse {
			return Drop, nil
		}
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = h.Version
		mergeProduceDropped(resp, &p.Dropped)
		s.answerKmsg(p, resp)
		return Answer, nil
	}
	return Forward, nil
}

func produceRefuseAll(s *Session, h *codec.RequestHeader, body []byte, p *Pending, code int16) (Outcome, error) {
	req, err := decodeRequest(h, body)
	if err != nil {
		p.Cause = "malformed Produce"
		return Disconnect, nil
	}
	pr := req.(*kmsg.ProduceRequest)
	if pr.Acks == 0 {
		return Drop, nil
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = h.Version
	for _, t := range pr.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, pp := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = pp.Partition
			rp.ErrorCode = code
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	s.answerKmsg(p, resp)
	return Answer, nil
}

func mergeProduceDropped(resp *kmsg.ProduceResponse, d *codec.Dropped) {
	for _, t := range d.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = string(t.Name)
		for _, part := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = part
			rp.ErrorCode = t.Code
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
}

// produceResponse maps the broker's answer back with codec's walker: no
// kmsg decode, no reflective scrub on the hottest answer (D9 is the
// walker's: words, foreign topics and unknown tags dropped).
func produceResponse(s *Session, p *Pending, body []byte) error {
	return s.RW.ProduceResponse(p.Version, p.ClientCorr, body, s.View, s.Brokers, &p.Dropped)
}
