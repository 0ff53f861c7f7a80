package session

import (
	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/engine/signals"
)

// verdictStage asks decide for its verdict, and carries it out: the
// request forwarded (its answer owed, its bytes reserved), answered by the
// gateway, dropped, or the connection closed.
type verdictStage struct{}

func (st verdictStage) admit(cl *Client, h codec.RequestHeader, frame []byte) step {
	p := cl.queue.Get()
	out := st.judge(cl, &h, frame, cl.wait.grant, p)
	if out == decide.Forward && h.Key == codec.KeyProduce {
		cl.ts.Produced(len(frame))
	}
	cl.quotas().quotaPending(p)
	cl.auditor().auditRequest(&h, frame, p, out) // O3, audit.go
	st.apply(cl, &h, p, out)
	return stepDone
}

// judge asks decide for its verdict on a request granted grant bytes of
// answer; p receives what the answer will need.
func (verdictStage) judge(cl *Client, h *codec.RequestHeader, frame []byte, grant int64, p *decide.Pending) decide.Outcome {
	out := cl.sess.Request(h, frame, cl.up.corr+1, int32(min(grant, int64(cl.fetchCap()))), p)
	cl.sess.FetchQuota = 0 // quotaGate's, for this request alone
	if out == decide.Forward && h.Key == codec.KeyProduce {
		out = cl.produceQuota(h, frame, p, out) // budget_quota.go
	}
	return out
}

// apply carries out decide's verdict: the request forwarded (its answer
// owed, its bytes reserved), answered by the gateway, dropped, or the
// connection closed.
func (verdictStage) apply(cl *Client, h *codec.RequestHeader, p *decide.Pending, out decide.Outcome) {
	cl.auditor().countRequest(h.Key, p, out)
	switch out {
	case decide.Forward:
		cl.up.corr++
		cl.up.conn.write(cl.sess.RW.Vec.Slices())
		if h.Key == codec.KeyProduce && cl.ps.large {
			cl.ps.large = false // a Produce whole in one read
			cl.flow().syncMarks()
		}
		if cl.closed {
			return
		}
		cl.answers().owe(p)
	case decide.Answer:
		cl.answers().answerPending(p)
	case decide.Drop:
		cl.queue.Put(p)
	case decide.Disconnect:
		cause := p.Cause
		cl.queue.Put(p)
		cl.close(signals.CloseRefusedAPI, "cluster", cl.route.Cluster.Name, "tenant", cl.auth.ident.Tenant, "api", decide.Name(h.Key), "version", h.Version, "cause", cause)
	}
}
