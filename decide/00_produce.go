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
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AnswerReserve is the bytes reserved for an answer that carries no records
// (the engine asks the budgets for it before a request is judged).
const AnswerReserve = 4 << 10

func init() { reg(0, Served, 0, 12, produceRequest, produceResponse) }

func produceRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) Outcome {
	info, err := s.RW.Produce(h, p.UpCorr, s.cid, body, s.View)
	if err != nil {
		p.Cause = "malformed Produce: " + err.Error()
		return Disconnect
	}
	if info.Transactional && !s.View.Transactions {
		// A transactional Produce of a session without transactions: the
		// broker would refuse it for want of InitProducerId anyway; answer
		// for every topic without asking.
		return produceRefuseAll(s, h, body, p, kerr.TransactionalIDAuthorizationFailed.Code)
	}
	p.NoResponse = info.Acks == 0
	p.Dropped = s.RW.Dropped.Clone()
	p.Reserve = AnswerReserve
	if info.Kept == 0 {
		if p.NoResponse {
			return Drop
		}
		return answer(s, p, func(r *kmsg.ProduceResponse) {
			for _, t := range p.Dropped.Topics {
				r.Topics = append(r.Topics, produceRefused(string(t.Name), t.Partitions, t.Code))
			}
		})
	}
	return Forward
}

// produceRefuseAll answers every partition of a Produce code.
func produceRefuseAll(s *Session, h *codec.RequestHeader, body []byte, p *Pending, code int16) Outcome {
	req, ok := decodeReq[kmsg.ProduceRequest](h, body, p)
	switch {
	case !ok:
		return Disconnect
	case req.Acks == 0:
		return Drop
	}
	return answer(s, p, func(r *kmsg.ProduceResponse) {
		for _, t := range req.Topics {
			r.Topics = append(r.Topics, produceRefused(t.Topic,
				partitionsOf(t.Partitions, func(p *kmsg.ProduceRequestTopicPartition) int32 { return p.Partition }), code))
		}
	})
}

// produceRefused is the answer topic refusing partitions with code.
func produceRefused(topic string, partitions []int32, code int16) kmsg.ProduceResponseTopic {
	rt := kmsg.NewProduceResponseTopic()
	rt.Topic = topic
	for _, part := range partitions {
		rp := kmsg.NewProduceResponseTopicPartition()
		rp.Partition = part
		rp.ErrorCode = code
		rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

// produceResponse maps the broker's answer back with codec's walker: no
// kmsg decode, no reflective scrub on the hottest answer (D9 is the
// walker's: words, foreign topics and unknown tags dropped).
func produceResponse(s *Session, p *Pending, body []byte) error {
	err := s.RW.ProduceResponse(p.Version, p.ClientCorr, body, s.View, s.Brokers, &p.Dropped, p.Throttle)
	p.BrokerThrottle = s.RW.BrokerThrottle
	return err
}
