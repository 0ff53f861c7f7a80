package engine

import (
	"github.com/flexway/flexway/decide"
)

// The client's side of the signals (O1): which series a connection counts
// in, and the decision and cause of a judged request.

// clusterName is the route's virtual cluster, "" before SNI says it.
func (r portRoute) clusterName() string {
	if r.cluster == nil {
		return ""
	}
	return r.cluster.Name
}

// setSeries moves the connection to the series ts (its SNI read, its
// authentication): the connections gauge follows it.
func (cl *client) setSeries(ts *tenantSeries, mech mechIdx) {
	if ts == cl.ts && mech == cl.connMech {
		return
	}
	cl.e.m.connMoved(cl.ts, cl.connMech, ts, mech)
	cl.ts, cl.connMech = ts, mech
}

// countRequest counts a request decide judged: refused as soon as a part of
// it is (seed 001), throttled when the quota said so, else allowed.
func (cl *client) countRequest(key int16, p *decide.Pending, out decide.Outcome) {
	throttled := cl.throttling
	cl.throttling = false
	switch out {
	case decide.Forward:
		if code := p.RefusedCode(); code != 0 {
			cl.ts.request(key, decRefused, causeOfCode(key, code))
		} else if throttled {
			cl.ts.request(key, decThrottled, causeQuota)
		} else {
			cl.ts.request(key, decAllowed, causeNone)
		}
	case decide.Answer, decide.Drop:
		if code := p.RefusedCode(); code != 0 {
			cl.ts.request(key, decRefused, causeOfCode(key, code))
		} else {
			cl.ts.request(key, decRefused, causeOfText(key, p.Cause))
		}
	case decide.Disconnect:
		cause := causeUnsupported
		if isAdminAPI(key) {
			cause = causeAdminAPI
		}
		cl.ts.request(key, decRefused, cause)
	}
}
