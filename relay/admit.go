package relay

import "time"

// Kind is what a request may do now. The kinds are ordered from the most
// permissive to the strictest: of two verdicts on one request, the greater
// kind wins (Join).
type Kind uint8

const (
	// Go: forward it now, asking the broker for at most Verdict.Grant bytes.
	Go Kind = iota
	// WaitBytes: it waits in the client's buffer until bytes are given back
	// (an answer read, a reservation released); the connection is held and
	// asked again at each tick.
	WaitBytes
	// WaitUntil: it waits until Verdict.Until (a quota's throttle). No
	// budget produces it yet; a held connection asked again before then is
	// told to wait again.
	WaitUntil
	// Close: the connection closes (Verdict.Cause says why).
	Close
)

// Cause says why a verdict closes the connection.
type Cause uint8

const (
	CauseNone Cause = iota
	// CauseTenantShare: the tenant's in-flight share is reached and the
	// listener says on_tenant_budget_exceeded: close.
	CauseTenantShare
)

// Verdict is the answer of Admit.
type Verdict struct {
	Kind  Kind
	Grant int64     // Go: the bytes the request may ask of the broker
	By    Level     // WaitBytes, Close: the budget that limits
	Until time.Time // WaitUntil
	Cause Cause     // Close
}

// Join returns the stricter of two verdicts on one request: the greater
// kind; of two Go the smaller grant, of two WaitUntil the later time.
func Join(a, b Verdict) Verdict {
	switch {
	case a.Kind != b.Kind:
		if a.Kind > b.Kind {
			return a
		}
		return b
	case a.Kind == Go && b.Grant < a.Grant:
		return b
	case a.Kind == WaitUntil && b.Until.After(a.Until):
		return b
	}
	return a
}

// Ask is what one request asks of the budgets.
type Ask struct {
	Outbound int64 // the client's unread bytes (its outbound buffer)
	Want     int64 // the most its answer may bring back
	// Min: a grant below it (and below Want) waits rather than ask the
	// broker for crumbs (a Fetch); 0 takes any grant.
	Min int64
	// CloseOnTenant: on_tenant_budget_exceeded is close, not wait.
	CloseOnTenant bool
}

// Admit says whether a request may go on now (B2): what the broker may
// answer must fit the connection's, the tenant's and the replica's
// budgets, except that an idle connection is always granted one answer
// alone. Past the tenant's share the connection waits, or closes when the
// listener says so.
func (b *Budget) Admit(a Ask) Verdict {
	g, by := b.grant(a.Outbound, a.Want)
	if g > 0 && (g >= a.Min || g >= a.Want) {
		return Verdict{Kind: Go, Grant: g}
	}
	if by == LevelTenant && a.CloseOnTenant {
		return Verdict{Kind: Close, By: by, Cause: CauseTenantShare}
	}
	return Verdict{Kind: WaitBytes, By: by}
}
