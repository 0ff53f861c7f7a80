package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/engine/conn"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Issue 33.4: from an address past its free refusals, a wrong key's
// answer waits and its connection is not read meanwhile (paused: what it
// sends stays in the kernel, not in the gateway), while the right key
// from the same address is answered at once; the delayed refusal comes
// before auth_timeout, the connection closed.
func TestDelayedRefusalNotReadGoodKeyPrompt(t *testing.T) {
	env := newTestEnv(t, "")
	// 10 wrong keys in a burst, their answers not awaited: 5 free, 5 past
	// them; the next refusal waits auth.GuardDelay(6), the cap.
	for i := range 10 {
		dialPlain(t, env.boot).saslPlain("acme-app", fmt.Sprint("guess-", i))
	}
	r := dialPlain(t, env.boot)
	r.saslPlain("acme-app", "one-more-guess")
	sent := time.Now()

	start := time.Now()
	dialRaw(t, env.boot, "acme-app", env.keys["acme-app"]) // fails the test unless authenticated
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the right key from the guessing address took %v: a good key is never delayed", took)
	}

	cl := clientOf(t, env.e, r)
	waitUntil(t, 5*time.Second, "the delayed refusal's connection paused", func() bool {
		paused := false
		onLoopOf(t, cl, func() { paused = cl.Conn().PausedFor(conn.Held) && !cl.State().Gone })
		return paused
	})
	garbage := make([]byte, 256<<10)
	_ = r.c.SetWriteDeadline(time.Now().Add(time.Second))
	n, _ := r.c.Write(garbage)
	time.Sleep(200 * time.Millisecond) // what the gateway would read, were it reading
	var buffered int
	var authed bool
	onLoopOf(t, cl, func() { buffered, authed = cl.Conn().Buffered(), cl.State().Authed })
	if buffered > 0 || authed {
		t.Fatalf("while its refusal waits: %d bytes of the %d sent read by the gateway (authenticated %v); want none", buffered, n, authed)
	}
	r.expectClosed(auth.GuardMax + 2*time.Second)
	if took := time.Since(sent); took < auth.GuardDelay(5) {
		t.Fatalf("the refusal past the burst came after %v, want at least %v", took, auth.GuardDelay(5))
	}
}

// The delay ends before auth_timeout: with auth_timeout 2 s, a refusal
// the guard would delay 3 s is answered SASL_AUTHENTICATION_FAILED before
// the connection's 2 s are up, never closed by the timeout unanswered.
func TestDelayedRefusalAnsweredBeforeAuthTimeout(t *testing.T) {
	env := newTestEnv(t, "    auth_timeout: 2s\n")
	for i := range 10 {
		dialPlain(t, env.boot).saslPlain("acme-app", fmt.Sprint("guess-", i))
	}
	opened := time.Now()
	r := dialPlain(t, env.boot)
	r.saslPlain("acme-app", "one-more-guess")
	if a := r.authAnswer(); a.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("error %d, want SASL_AUTHENTICATION_FAILED", a.ErrorCode)
	}
	if took := time.Since(opened); took >= 2*time.Second || took < time.Second {
		t.Fatalf("answered %v after the connection opened; want after the delay (1 s at least) and before auth_timeout (2 s)", took)
	}
}
