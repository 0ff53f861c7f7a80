package session

import (
	"time"

	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/engine/conn"
	"github.com/flexway/flexway/engine/signals"
)

// Failed logins cost the guesser time (issue 33.4): a credential refused
// is answered SASL_AUTHENTICATION_FAILED as the seed says, but from an
// address past auth.GuardFree refusals a second the answer waits
// (auth.Guard: growing, capped, forgotten). Only the answer waits: the
// refusal is logged, counted and audited at once, and an identity
// verified is answered at once whatever its address has done. While it
// waits the connection is not read (paused, its bytes left in the
// kernel) and holds its unauthenticated place, as a connection still
// authenticating does; the wait ends before auth_timeout.

// authAnswerMargin: a delayed refusal is answered this long before
// auth_timeout at the latest, so that it is the client's answer, not the
// sweep's close (checked once a second).
const authAnswerMargin = 500 * time.Millisecond

// causePoolFull: the worker pool had no room for the verification; the
// gateway's state, not the credential's: never delayed.
const causePoolFull = "authentication pool full"

// credentialRefused logs, counts and audits an authentication refused,
// then answers it, later when the credential itself was refused (guessed:
// not a tenant or cluster check of a verified identity) and its address
// has used up its free refusals.
func (cl *authn) credentialRefused(res *auth.Result, h *codec.RequestHeader, mode authMode, guessed bool) {
	delay := time.Duration(0)
	if guessed && (mode == authSASL || mode == authLegacy) {
		delay = cl.loginDelay(time.Now())
	}
	line := []any{"cause", res.Cause, "user", res.User, "cluster", cl.route.Cluster.Name, "mechanism", cl.auth.mech}
	if delay > 0 {
		line = append(line, "answer_delay", delay.String())
	}
	cl.env.RefusedLine("kafka authentication refused", line...)
	if mode != authCert { // a certificate is no request
		cl.client().auditor().count(codec.KeySASLAuthenticate, signals.Refused, signals.CauseAuthentication, 0)
	}
	cl.client().auditor().auditAuthRefused(res)
	if delay <= 0 {
		cl.authFailed(h, mode)
		return
	}
	cl.authFailedAfter(*h, mode, delay)
}

// loginDelay records a refused credential of cl's address and returns how
// long its answer waits, ending before auth_timeout.
func (cl *authn) loginDelay(now time.Time) time.Duration {
	d := cl.env.Bounds.perIP.logins.Refused(cl.ip, now)
	if d <= 0 {
		return 0
	}
	left := cl.clock.opened.Time().Add(cl.env.Snap.Load().Listener.AuthTimeout.D()).Sub(now) - authAnswerMargin
	return min(d, left)
}

// authFailedAfter answers the refusal after d: the connection stays
// authenticating (process takes no frame) and is not read meanwhile. The
// wait is a timer whose end is posted to the connection's loop: the loop
// never sleeps.
func (cl *authn) authFailedAfter(h codec.RequestHeader, mode authMode, d time.Duration) {
	cl.auth.state = stAuthing
	cl.client().flow().pause(conn.Held)
	time.AfterFunc(d, func() {
		_ = cl.lp.RunFor("auth", cl, func() {
			if !cl.closed { // else closed meanwhile: auth_timeout, the engine's stop
				cl.authFailed(&h, mode)
			}
		})
	})
}
