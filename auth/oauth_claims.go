package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/flexway/flexway/configs"
	jose "github.com/go-jose/go-jose/v4"
)

// A token's check once its issuer is chosen (see oauth.go): the signature by
// one of the issuer's keys, then the claims by hand, each refusal with its
// own cause.

// verifyWith checks the signature with the issuer's keys, then the claims.
func (v *OAuth) verifyWith(ctx context.Context, snap *configs.Snapshot, st *issuerKeys, jws *jose.JSONWebSignature, hdr joseHeader, now time.Time) Result {
	name := st.cfg.Name
	keys, err := st.keysFor(ctx, v, snap, hdr.Kid)
	if err != nil {
		return Result{Cause: fmt.Sprintf("keys of issuer %q unavailable", name)}
	}
	var payload []byte
	matched := false
	for i := range keys {
		k := &keys[i]
		if hdr.Kid != "" && k.KeyID != hdr.Kid {
			continue
		}
		if k.Algorithm != "" && k.Algorithm != hdr.Alg {
			continue
		}
		matched = true
		if p, err := jws.Verify(k); err == nil {
			payload = p
			break
		}
	}
	switch {
	case !matched:
		return Result{Cause: fmt.Sprintf("token signed by a key unknown to issuer %q", name)}
	case payload == nil:
		return Result{Cause: fmt.Sprintf("token signature not verified by issuer %q's keys", name)}
	}
	return checkClaims(snap, st, payload, now)
}

// tokenClaims are the claims read once the signature is verified.
type tokenClaims struct {
	Iss   *string         `json:"iss"`
	Sub   *string         `json:"sub"`
	Aud   json.RawMessage `json:"aud"`
	Exp   json.RawMessage `json:"exp"`
	Nbf   json.RawMessage `json:"nbf"`
	Scope json.RawMessage `json:"scope"`
	Scp   json.RawMessage `json:"scp"`
}

// checkClaims checks the verified claims against the issuer's configuration
// (iss, sub, aud, exp, nbf, the tenant claim, the scopes) and makes the
// identity; a refusal names the user once sub is read.
func checkClaims(snap *configs.Snapshot, st *issuerKeys, payload []byte, now time.Time) Result {
	name := st.cfg.Name
	var c tokenClaims
	var all map[string]json.RawMessage
	if json.Unmarshal(payload, &c) != nil || json.Unmarshal(payload, &all) != nil {
		return Result{Cause: "malformed token claims"}
	}
	st.mu.RLock()
	expectedIss := st.iss
	st.mu.RUnlock()
	if expectedIss != "" && (c.Iss == nil || *c.Iss != expectedIss) {
		return Result{Cause: fmt.Sprintf("token not issued by issuer %q (iss)", name)}
	}
	if c.Sub == nil || *c.Sub == "" {
		return Result{Cause: "token without sub"}
	}
	user := *c.Sub
	refuse := func(cause string) Result { return Result{Cause: cause, User: user} }
	if !audienceHas(c.Aud, st.cfg.Audience) {
		return refuse(fmt.Sprintf("token audience is not %q", st.cfg.Audience))
	}
	exp, ok, bad := numericDate(c.Exp)
	switch {
	case bad:
		return refuse("token exp is not a number")
	case !ok:
		return refuse("token without exp (exp is required)")
	case !now.Before(exp):
		return refuse("token expired")
	}
	if nbf, ok, bad := numericDate(c.Nbf); bad {
		return refuse("token nbf is not a number")
	} else if ok && now.Add(oauthLeeway).Before(nbf) {
		return refuse("token not valid yet (nbf)")
	}
	var tenant string
	raw, present := all[st.cfg.TenantClaim]
	if !present || string(raw) == "null" {
		return refuse(fmt.Sprintf("token without the tenant claim %q", st.cfg.TenantClaim))
	}
	if json.Unmarshal(raw, &tenant) != nil {
		return refuse(fmt.Sprintf("token tenant claim %q is not a string", st.cfg.TenantClaim))
	}
	scopes, good := tokenScopes(c.Scope, c.Scp)
	if !good {
		return refuse("token scope or scp is neither a string nor a list of strings")
	}
	ops := opsForScopes(snap, scopes)
	if len(ops) == 0 {
		return refuse("the token's scopes admit no operation")
	}
	actors, cause := delegated(all["act"], name, st.cfg.Delegation)
	if cause != "" {
		return refuse(cause)
	}
	return Result{User: user, ID: &Identity{
		Principal: user,
		Mechanism: configs.MechOAuth,
		Tenant:    tenant,
		Ops:       ops,
		Expires:   exp,
		Scopes:    slices.Sorted(maps.Keys(scopes)),
		Actors:    actors,
	}}
}

// maxActChain bounds the act chain read from a token, whatever the
// issuer's bounds (configs.MaxDelegationDepth is lower).
const maxActChain = 16

// actClaim is one link of RFC 8693's act claim: the actor's sub, and the
// actor it acted for in turn.
type actClaim struct {
	Sub *string         `json:"sub"`
	Act json.RawMessage `json:"act"`
}

// delegated reads a token's act chain (RFC 8693 4.1: the current actor
// outermost) and checks it against its issuer's delegation bounds: the
// actors, outermost first, or why the token is refused. A token without
// act acts for nobody.
func delegated(raw json.RawMessage, issuer string, d *configs.Delegation) ([]string, string) {
	var actors []string
	for len(raw) > 0 && string(raw) != "null" {
		if len(actors) == maxActChain {
			return nil, "token act chain too deep"
		}
		var a actClaim
		if json.Unmarshal(raw, &a) != nil {
			return nil, "token act claim is not an object"
		}
		if a.Sub == nil || *a.Sub == "" {
			return nil, "token act claim without sub"
		}
		actors = append(actors, *a.Sub)
		raw = a.Act
	}
	switch {
	case len(actors) == 0:
		return nil, ""
	case d == nil:
		return nil, fmt.Sprintf("token acts for another (act), and issuer %q admits no delegation", issuer)
	case len(actors) > d.MaxDepth:
		return nil, fmt.Sprintf("token's delegation chain holds %d actors, issuer %q admits %d", len(actors), issuer, d.MaxDepth)
	}
	for _, a := range actors {
		if len(d.Actors) > 0 && !slices.Contains(d.Actors, a) {
			return nil, fmt.Sprintf("token's actor %q is not one issuer %q admits", a, issuer)
		}
	}
	return actors, ""
}

// audienceHas: aud is a string or a list of strings (RFC 7519 4.1.3).
func audienceHas(raw json.RawMessage, want string) bool {
	if len(raw) == 0 {
		return false
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one == want
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		return slices.Contains(many, want)
	}
	return false
}

// numericDate reads a NumericDate (seconds since the epoch, maybe with a
// fraction): ok if present, bad if present and not a finite number.
func numericDate(raw json.RawMessage) (t time.Time, ok, bad bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, false, false
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1<<40 {
		return time.Time{}, false, true
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true, false
}

// tokenScopes: scope is a space-separated string (RFC 8693 4.2); scp a list
// of strings or a space-separated string (Azure, Okta).
func tokenScopes(scope, scp json.RawMessage) (map[string]bool, bool) {
	out := map[string]bool{}
	for _, raw := range []json.RawMessage{scope, scp} {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			for _, w := range strings.Fields(s) {
				out[w] = true
			}
			continue
		}
		var l []string
		if json.Unmarshal(raw, &l) != nil {
			return nil, false
		}
		for _, w := range l {
			if w = strings.TrimSpace(w); w != "" {
				out[w] = true
			}
		}
	}
	return out, true
}

// opsForScopes: the operations one of whose oauth2/openIdConnect
// alternatives requires only scopes the token carries, sorted by id.
func opsForScopes(snap *configs.Snapshot, scopes map[string]bool) []string {
	var ops []string
	for id, op := range snap.Operations {
		for _, alt := range op.OAuthScopes {
			if len(alt) == 0 {
				continue // never admits every token (configs refuses it anyway)
			}
			all := true
			for _, s := range alt {
				all = all && scopes[s]
			}
			if all {
				ops = append(ops, id)
				break
			}
		}
	}
	sort.Strings(ops)
	return ops
}
