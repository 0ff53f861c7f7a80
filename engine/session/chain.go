package session

import "github.com/flexway/flexway/codec"

// The admission chain (issue 34.1): the stages a request of an open
// session passes, in this order, as a CoreDNS plugin chain reads. Each
// stage is in the file named beside it, with its configuration's check,
// its series and its tests; a stage says whether the request goes on to
// the next, is done with (answered, refused, or its connection closed),
// or waits in the client's buffer, its wake arranged (a mute's timer, the
// tick's look at the held, the dial's end). A request that waits is
// handled again from the first stage: every stage that let it through
// holds nothing for it but the quota's spending (quotaConn.spent).
// Before the chain: the frame's size (process), its header, and what
// comes before a session (authn.handlePreAuth). A large Produce streamed
// as it arrives passes the same stages from its head (beginStream), a
// large Fetch answer streams back (fetch_stream.go).
var admission = [...]stage{
	sessionStage{},   // auth.go: the session is open (revoked by a reload, S2; its end, S3, I6)
	localStage{},     // local.go: what the gateway answers itself (ApiVersions, KIP-368)
	quotaHoldStage{}, // quota.go: a principal or tenant in debt waits, max_throttle at most (Q1, Q2)
	budgetStage{},    // budget_quota.go: the tenant's day/month budget read once (Q3)
	inFlightStage{},  // inflight.go: the broker connection, the in-flight budgets (B2)
	quotaGateStage{}, // quota.go: a Fetch in debt answered empty, a Fetch's allowance (Q2)
	verdictStage{},   // verdict.go: decide's verdict, audited (O3), counted and traced (O1, O5), carried out
}

// stage is one step of the admission chain. h is the request's header
// (a copy: a stage keeps nothing of it), frame the request without its
// size prefix, in the client's buffer until the request is done with.
type stage interface {
	admit(cl *Client, h codec.RequestHeader, frame []byte) step
}

// step is a stage's word on a request.
type step uint8

const (
	stepNext step = iota // on to the next stage
	stepDone             // done with: the frame is taken from the buffer
	stepWait             // it waits in the buffer; the stage arranged its wake
)

// admitChain passes a request of an open session through the chain; true
// when it is done with, false when it waits.
func (cl *Client) admitChain(h codec.RequestHeader, frame []byte) bool {
	for _, s := range admission {
		switch s.admit(cl, h, frame) {
		case stepDone:
			return true
		case stepWait:
			return cl.closed // a stage that closed the connection is done with it
		}
		if cl.closed {
			return true
		}
	}
	return true
}

// sessionStage: the session is open (auth.go).
type sessionStage struct{}

func (sessionStage) admit(cl *Client, _ codec.RequestHeader, _ []byte) step {
	if !cl.authn().checkSession() {
		return stepDone // closed
	}
	return stepNext
}
