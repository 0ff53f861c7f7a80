package decide

// Fetch (key 1), versions 4-12 (13 names topics by id; before 4 there is no
// isolation level): a receive operation opens a topic. The request is a
// consumer's (ReplicaID -1), always full (no incremental session), bounded
// to max_fetch_wait and to the bytes the budgets allow (at most
// max_response_bytes / 2), its partitions to their share of what the quotas
// allow (Session.FetchQuota). The answer's record batches are referenced, never
// copied (D5).

import "github.com/flexway/flexway/codec"

func init() { reg(1, Served, 4, 12, fetchRequest, fetchResponse) }

// fetchOverhead is what an answer adds to its records, per partition.
const fetchOverhead = 128

func fetchRequest(s *Session, h *codec.RequestHeader, body []byte, p *Pending) Outcome {
	info, err := s.RW.FetchRequest(h, p.UpCorr, s.cid, body, s.View, codec.FetchLimits{
		MaxWaitMs:  s.Limits.MaxFetchWaitMs,
		MaxBytes:   s.grant,
		QuotaBytes: s.FetchQuota,
	})
	if err != nil {
		p.Cause = "malformed Fetch: " + err.Error()
		return Disconnect
	}
	p.Dropped = s.RW.Dropped.Clone()
	p.asked = s.RW.FetchAsked(p.asked[:0])
	p.Reserve = int64(info.MaxBytes) + int64(fetchOverhead*(info.Partitions+1))
	if info.Kept == 0 {
		// Nothing to ask: the answer is the refusals alone.
		return fetchAnswerLocal(s, p)
	}
	return Forward
}

func fetchAnswerLocal(s *Session, p *Pending) Outcome {
	// An empty broker answer of the same version, rewritten as usual.
	var empty []byte
	empty = append(empty, 0, 0, 0, 0) // throttle
	if p.Version >= 7 {
		empty = append(empty, 0, 0, 0, 0, 0, 0) // error code, session id
	}
	if p.Version >= 12 {
		empty = append(empty, 1, 0) // no topics, no tags
	} else {
		empty = append(empty, 0, 0, 0, 0)
	}
	if err := s.RW.FetchResponse(p.Version, p.ClientCorr, empty, s.View, &p.Dropped, 0); err != nil {
		p.Cause = "Fetch answer: " + err.Error()
		return Disconnect
	}
	return Answer
}

func fetchResponse(s *Session, p *Pending, body []byte) error {
	err := s.RW.FetchResponse(p.Version, p.ClientCorr, body, s.View, &p.Dropped, p.Throttle)
	p.BrokerThrottle = s.RW.BrokerThrottle
	return err
}
