package session

import (
	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/engine/signals"
)

// localStage: what an open session asks of the gateway itself, answered
// in order with the broker's answers and counted against request_rate.
type localStage struct{}

func (st localStage) admit(cl *Client, h codec.RequestHeader, frame []byte) step {
	if !st.answer(cl, &h, frame) {
		return stepNext
	}
	cl.quotas().quotaLocal()
	return stepDone
}

// answerLocally serves what an open session asks of the gateway itself,
// in order with the broker's answers: ApiVersions and the KIP-368
// re-authentication. It reports whether it did.
func (localStage) answer(cl *Client, h *codec.RequestHeader, frame []byte) bool {
	switch h.Key {
	case codec.KeyApiVersions:
		cl.lp.scratch = cl.env.versions(cl.route.Cluster.Name).AppendAnswer(cl.lp.scratch[:0], h)
		cl.auditor().countLocal(h.Key, cl.answers().answerLocal(cl.lp.scratch), signals.Allowed, signals.CauseNone, cl.clock.reqSince)
		return true
	case codec.KeySASLHandshake, codec.KeySASLAuthenticate:
		cl.authn().reauthRequest(h, frame)
		return true
	}
	return false
}
