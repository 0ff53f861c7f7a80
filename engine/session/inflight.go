package session

import (
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/engine/signals"
	"github.com/flexway/flexway/relay"
)

// inFlightStage: the request's broker connection, dialed at the first
// request, then its in-flight budgets (B2): what the broker may answer
// must fit the connection's, its tenant's share and the replica's, except
// one answer alone. Past them it waits, held (the tick and every answer
// that frees bytes ask again); past the tenant's share under
// on_tenant_budget_exceeded: close, the connection is closed.
type inFlightStage struct{}

func (st inFlightStage) admit(cl *Client, h codec.RequestHeader, _ []byte) step {
	g, ok := st.grant(cl, h.Key)
	if !ok {
		return stepWait
	}
	cl.wait.grant = g
	return stepNext
}

// admit says whether the request may be forwarded now: its broker
// connection first (dialed at the first request), then the budgets (B2,
// relay.Budget.Admit): what the broker may answer must fit, except one
// answer alone. It returns the bytes granted, or false when the request
// waits (the dial, or held for the budget) or the connection was closed.
func (inFlightStage) grant(cl *Client, key int16) (int64, bool) {
	if cl.up.state == upNone {
		cl.dial()
		return 0, false
	}
	if cl.up.conn.mustRenew() { // KIP-368 towards the broker (upstream_secure.go)
		return 0, false
	}
	ask := relay.Ask{
		Outbound:      int64(cl.c.Queued()),
		Want:          decide.AnswerReserve,
		CloseOnTenant: cl.snap.Listener.OnTenantBudgetExceeded == "close",
	}
	if key == codec.KeyFetch {
		ask.Want, ask.Min = int64(cl.fetchCap()), minFetchGrant
	}
	v := cl.budget.Admit(ask)
	switch v.Kind {
	case relay.Go:
		cl.wait.replica = false
		if !cl.wait.since.IsZero() {
			cl.env.Signals.TenantWait(cl.ts, cl.wait.since.age(time.Now()))
			cl.wait.since = 0
		}
		return v.Grant, true
	case relay.Close: // relay.CauseTenantShare, the one cause a budget closes for
		cl.env.Signals.TenantBudget(cl.ts, false)
		cl.close(signals.CloseTenantShare, "cluster", cl.route.Cluster.Name, "tenant", cl.auth.ident.Tenant, "max_tenant_in_flight_bytes", cl.budget.Tenant.Limit)
		return 0, false
	case relay.WaitBytes:
		if v.By == relay.LevelTenant && cl.wait.since.IsZero() {
			cl.env.Signals.TenantBudget(cl.ts, true)
			cl.wait.since = nowInstant()
		}
		if v.By == relay.LevelReplica && !cl.wait.replica {
			cl.wait.replica = true
			cl.env.Series.ReplicaWaits.Add(1)
		}
	}
	// WaitBytes and WaitUntil: the frame stays in the buffer; the tick asks again.
	cl.hold()
	return 0, false
}

// minFetchGrant: below this, a Fetch waits for the budget rather than ask
// for crumbs (unless the connection is idle: one answer crosses alone).
const minFetchGrant = 64 << 10

func (cl *Client) fetchCap() int32 {
	return int32(min(int64(cl.snap.Listener.MaxResponseBytes)/2, int64(1<<31-1)))
}

// hold parks the connection until its budget allows the next request.
func (cl *Client) hold() {
	if cl.wait.held {
		return
	}
	cl.wait.held = true
	if !cl.wait.listed {
		cl.wait.listed = true
		cl.lp.held = append(cl.lp.held, cl)
	}
}

// resume retries a held connection (from the sweep, or when an answer frees bytes).
func (cl *Client) resume() {
	if !cl.wait.held || cl.closed {
		return
	}
	cl.wait.held = false
	cl.process()
}
