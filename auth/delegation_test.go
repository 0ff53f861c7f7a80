package auth

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/internal/testkit"
)

// act builds an RFC 8693 act claim: the current actor first, then the
// actors it acted for in turn.
func act(subs ...string) any {
	var a any
	for i := len(subs) - 1; i >= 0; i-- {
		m := map[string]any{"sub": subs[i]}
		if a != nil {
			m["act"] = a
		}
		a = m
	}
	return a
}

// I2, S2 (issue 24.7): a token acting for another subject (act) is
// admitted only within its issuer's delegation bounds, the depth and the
// actors; the principal is the subject, the actors are the identity's
// chain; a reload that narrows the bounds refuses it (Recheck).
func TestOAuthDelegation(t *testing.T) {
	ti := testkit.NewIssuer(t)
	bounded := issuerConfig(ti)
	bounded.Delegation = &configs.Delegation{MaxDepth: 2, Actors: []string{"ci-runner", "scheduler"}}
	snap := oauthSnap(bounded)
	v := newVerifiers(t, snap)

	for _, tc := range []struct {
		name   string
		act    any
		actors []string
	}{
		{"no act", nil, nil},
		{"one actor", act("ci-runner"), []string{"ci-runner"}},
		{"two actors", act("scheduler", "ci-runner"), []string{"scheduler", "ci-runner"}},
	} {
		tok := ti.Key.Sign(t, testkit.Claims(ti.URL, map[string]any{"act": tc.act}))
		res := verifyMsg(v, snap, bearerMsg(tok))
		if res.ID == nil {
			t.Fatalf("%s: refused: %s", tc.name, res.Cause)
		}
		if res.ID.Principal != "billing" || !slices.Equal(res.ID.Actors, tc.actors) {
			t.Fatalf("%s: principal %q, actors %q; want billing, %q", tc.name, res.ID.Principal, res.ID.Actors, tc.actors)
		}
	}

	for _, tc := range []struct {
		name  string
		act   any
		cause string
	}{
		{"too deep", act("scheduler", "ci-runner", "scheduler"), "holds 3 actors, issuer \"test\" admits 2"},
		{"an actor not admitted", act("intruder"), "actor \"intruder\" is not one issuer \"test\" admits"},
		{"act not an object", "ci-runner", "act claim is not an object"},
		{"act without sub", map[string]any{"client_id": "ci-runner"}, "act claim without sub"},
	} {
		tok := ti.Key.Sign(t, testkit.Claims(ti.URL, map[string]any{"act": tc.act}))
		refused(t, tc.name, verifyMsg(v, snap, bearerMsg(tok)), tc.cause, tok)
	}

	// An issuer without delegation refuses any act.
	plain := oauthSnap(issuerConfig(ti))
	tok := ti.Key.Sign(t, testkit.Claims(ti.URL, map[string]any{"act": act("ci-runner")}))
	refused(t, "no delegation", verifyMsg(newVerifiers(t, plain), plain, bearerMsg(tok)), "admits no delegation", tok)

	// A reload narrowing the bounds: the session's token no longer stands.
	res := verifyMsg(v, snap, bearerMsg(tok))
	if res.ID == nil {
		t.Fatal(res.Cause)
	}
	ctx := context.Background()
	if got := v.Recheck(ctx, snap, res.ID, time.Now()); got != "" {
		t.Fatalf("the same bounds: %q", got)
	}
	narrowed := issuerConfig(ti)
	narrowed.Delegation = &configs.Delegation{MaxDepth: 2, Actors: []string{"scheduler"}}
	ns := oauthSnap(narrowed)
	if got := newVerifiers(t, ns).Recheck(ctx, ns, res.ID, time.Now()); got == "" {
		t.Fatal("a token whose actor the reload no longer admits still stands")
	}
}
