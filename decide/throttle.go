package decide

import (
	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Quotas (issue 8, Q2): the answers' throttle_time_ms.

// throttler is a kmsg answer with a throttle_time_ms field.
type throttler interface {
	Throttle() (int32, bool)
	SetThrottle(int32)
}

// raiseThrottle raises resp's throttle_time_ms to at least ms (the
// gateway's quota); a version without the field does not encode it.
func raiseThrottle(resp kmsg.Response, ms int32) {
	if ms <= 0 {
		return
	}
	if t, ok := resp.(throttler); ok {
		if cur, _ := t.Throttle(); ms > cur {
			t.SetThrottle(ms)
		}
	}
}

// ThrottledFetch answers a Fetch of a principal or tenant in debt at once,
// the broker not asked: as Kafka answers a throttled full fetch, no topic,
// error NONE, throttle_time_ms. p is filled as Request would (its Key,
// Version, correlation ids); s.RW.Vec holds the frame. The request is not
// judged: an empty answer names nothing. False when the version is not
// served (the caller judges the request then, which refuses it).
func (s *Session) ThrottledFetch(h *codec.RequestHeader, p *Pending, throttleMs int32) bool {
	if h.Key != codec.KeyFetch || !s.Versions.Has(h.Key, h.Version) {
		return false
	}
	s.scratch()
	p.reset()
	p.Key, p.Version, p.ClientCorr = h.Key, h.Version, h.Correlation
	p.Throttle = throttleMs
	var empty [16]byte
	n := 4 // throttle: raised by the rewrite
	if p.Version >= 7 {
		n += 6 // error code, session id
	}
	if p.Version >= 12 {
		empty[n] = 1 // no topics (compact), then no tags
		n += 2
	} else {
		n += 4 // no topics
	}
	return s.RW.FetchResponse(p.Version, p.ClientCorr, empty[:n], s.View, nil, throttleMs) == nil
}
