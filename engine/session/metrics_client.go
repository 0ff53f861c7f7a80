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
func (cl *Client) setSeries(ts *signals.TenantSeries, mech signals.Mech) {
	if ts == cl.ts && mech == cl.connMech {
		return
	}
	cl.env.Signals.ConnMoved(cl.ts, cl.connMech, ts, mech)
	cl.ts, cl.connMech = ts, mech
}

// countRequest counts a request decide judged: refused as soon as a part of
// it is (seed 001), throttled when the quota said so, else allowed.
func (cl *Client) countRequest(key int16, p *decide.Pending, out decide.Outcome) {
	throttled := cl.throttling
	cl.throttling = false
	switch out {
	case decide.Forward:
		if code := p.RefusedCode(); code != 0 {
			cl.count(key, signals.Refused, signals.CauseOfCode(key, code), p.Throttle)
		} else if throttled {
			cl.count(key, signals.Throttled, signals.CauseQuota, p.Throttle)
		} else {
			cl.count(key, signals.Allowed, signals.CauseNone, p.Throttle)
		}
	case decide.Answer, decide.Drop, decide.Disconnect:
		cl.count(key, signals.Refused, signals.RefusalCause(key, out, p.RefusedCode(), p.Cause), p.Throttle)
	}
}
