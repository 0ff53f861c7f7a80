package session

import (
	"iter"
	"time"

	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/engine/conn"
)

// What a session holds, read on its loop: the engine's tests look through
// it (the drain and the flow tests count what is held, paused, owed).

// State is a session's state at a moment.
type State struct {
	Gone     bool           // closed
	Authed   bool           // its authentication succeeded
	Ident    *auth.Identity // nil before authentication
	TLS      bool           // in its TLS handshake or after it
	Held     bool           // waiting for its budgets (B2)
	Draining bool           // marked by the engine's drain (U4)
	Requests int            // forwarded and not yet answered
	Reserved int64          // bytes in flight reserved by its budget
	Node     int32          // the broker it reaches (-1: the bootstrap)
	Corr     int32          // the last correlation id forwarded to its broker
	// Dialing: no broker connection yet (dialed, or its TLS and SASL under
	// way); Broker: its handle once open, nil otherwise.
	Dialing   bool
	Broker    *conn.Conn
	BrokerTLS bool // its broker connection has a TLS record layer
	// Renews and RenewBy are its broker session's (KIP-368 towards the
	// broker): renewals done, the next one due by (zero: none announced).
	Renews  int
	RenewBy time.Time
	// The quota's state (quota.go): the principal's buckets held, a timer
	// armed, the session muted or listed as such.
	QuotaCounted, QuotaTimer, QuotaMuted bool
}

// State returns the session's state; on its loop.
func (cl *Client) State() State {
	s := State{Gone: cl.closed, Authed: cl.auth.state == stAuthed, Ident: cl.auth.ident, TLS: cl.auth.tls != nil || cl.auth.tlsHS != nil,
		Held: cl.wait.held, Draining: cl.drain.on, Requests: cl.queue.Len(), Reserved: cl.budget.Reserved,
		Node: cl.route.Node, Corr: cl.up.corr, Dialing: cl.up.conn == nil || cl.up.state == upDialing}
	if u := cl.up.conn; u != nil {
		if u.c != nil && !u.closed {
			s.Broker = u.c
		}
		s.BrokerTLS = u.rec != nil
		if u.sec != nil {
			s.Renews, s.RenewBy = u.sec.renews, u.sec.renewBy
		}
	}
	if q := cl.q; q != nil {
		s.QuotaCounted = q.p != nil
		s.QuotaTimer = q.timer != nil || q.wake != nil
		s.QuotaMuted = q.muted || q.listed
	}
	return s
}

// Conn is the client's handle (engine/conn).
func (cl *Client) Conn() *conn.Conn { return cl.c }

// Loop is the client's loop.
func (cl *Client) Loop() *Loop { return cl.lp }

// Clients are the loop's clients; on the loop.
func (l *Loop) Clients() iter.Seq[*Client] {
	return func(yield func(*Client) bool) {
		for cl := range l.clients {
			if !yield(cl) {
				return
			}
		}
	}
}

func (l *Loop) Muted() int { return len(l.muted) }

// LoopState is what a loop holds beside its clients.
type LoopState struct {
	Listed   []*Client // the sweep's list of clients held for their budgets
	Muted    int       // clients muted by a quota
	Pipe     bool      // its splice pipe is made
	Watching bool      // its write watcher is made (conn.Loop.Watching)
	Draining int       // broker connections of gone clients, not yet closed
}

// State returns the loop's state; on the loop.
func (l *Loop) State() LoopState {
	s := LoopState{Listed: l.held, Muted: len(l.muted), Pipe: l.pp != nil, Watching: l.fc.Watching()}
	for _, u := range l.draining {
		if !u.closed {
			s.Draining++
		}
	}
	return s
}
