package decide

import "github.com/flexway/flexway/codec"

// RefuseProduce answers a Produce that Request judged Forward with code on
// every partition it names, instead of forwarding it (issue 8 item 4: the
// tenant's day or month quota is spent, POLICY_VIOLATION): what Request
// prepared for the broker is dropped. frame is the request Request read.
// It returns Answer, Drop for acks=0 (no answer, nothing written), or
// Disconnect for a body that does not decode.
func (s *Session) RefuseProduce(h *codec.RequestHeader, frame []byte, p *Pending, code int16) Outcome {
	s.scratch()
	key, version, corr, up := p.Key, p.Version, p.ClientCorr, p.UpCorr
	p.reset()
	p.Key, p.Version, p.ClientCorr, p.UpCorr = key, version, corr, up
	s.hdr = *h
	out := produceRefuseAll(s, &s.hdr, frame[h.BodyOffset:], p, code)
	s.hdr = codec.RequestHeader{}
	if out == Answer || out == Drop {
		p.Cause = causeOf(code)
	}
	return out
}
