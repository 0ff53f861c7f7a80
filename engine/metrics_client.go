package engine

import (
	"github.com/flexway/flexway/audit"
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
	case decide.Answer, decide.Drop, decide.Disconnect:
		cl.ts.request(key, decRefused, refusalCause(key, out, p.RefusedCode(), p.Cause))
	}
}

// refusalCause is the seed's cause of a request decide refused, whole or
// in part: code is the Kafka error of its first refused part (0 when none
// says), text the cause decide gave an answer it built whole. The one
// mapping of the signals and the audit trail (O1, O3).
func refusalCause(key int16, out decide.Outcome, code int16, text string) reqCause {
	switch {
	case out == decide.Disconnect:
		if audit.IsAdmin(key) {
			return causeAdminAPI
		}
		return causeUnsupported // never announced, a version not announced, unreadable
	case code != 0:
		return causeOfCode(key, code)
	}
	return causeOfText(key, text)
}
