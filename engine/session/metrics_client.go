package session

import (
	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/engine/signals"
)

// The client's side of the signals (O1): which series a connection counts
// in, and the decision and cause of a judged request.

// clusterName is the route's virtual cluster, "" before SNI says it.
func (r Route) clusterName() string {
	if r.Cluster == nil {
		return ""
	}
	return r.Cluster.Name
}

// setSeries moves the connection to the series ts (its SNI read, its
// authentication): the connections gauge follows it.
func (cl *auditor) setSeries(ts *signals.TenantSeries, mech signals.Mech) {
	if ts == cl.ts && mech == cl.connMech {
		return
	}
	cl.env.Signals.ConnMoved(cl.ts, cl.connMech, ts, mech)
	cl.ts, cl.connMech = ts, mech
}

// countRequest counts a request decide judged: refused as soon as a part of
// it is (seed 001), at once; forwarded whole, as its answer leaves, with
// the throttle that answer carries (requestDone, trace.go); forwarded without
// an answer (acks=0), now. Refused or answered by the gateway, its span
// ends at its answer, or now when it has none.
func (cl *auditor) countRequest(key int16, p *decide.Pending, out decide.Outcome) {
	switch out {
	case decide.Forward:
		if code := p.RefusedCode(); code != 0 {
			cl.countAt(key, p, signals.Refused, signals.CauseOfCode(key, code))
		} else {
			cl.countLater(p)
		}
		if p.NoResponse {
			cl.requestDone(p) // no answer: done with once forwarded
		}
	case decide.Answer, decide.Drop, decide.Disconnect:
		cl.countAt(key, p, signals.Refused, signals.RefusalCause(key, out, p.RefusedCode(), p.Cause))
		if out != decide.Answer {
			cl.requestDone(p)
		}
	}
}
