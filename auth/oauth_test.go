package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/internal/testkit"
	jose "github.com/go-jose/go-jose/v4"
)

// issuerConfig is the issuer as flexway.yaml declares it.
func issuerConfig(ti *testkit.Issuer) configs.Issuer {
	return configs.Issuer{Name: "test", Discovery: ti.Discovery(), Audience: "kafka", TenantClaim: "org", CAFile: ti.CAFile}
}

func bearerMsg(tok string) []byte { return []byte("n,,\x01auth=Bearer " + tok + "\x01\x01") }

// oauthSnap is a snapshot with the given issuers and operations whose
// oauth2 alternatives require scopes.
func oauthSnap(issuers ...configs.Issuer) *configs.Snapshot {
	return &configs.Snapshot{
		File: &configs.File{Auth: configs.Auth{Issuers: issuers}},
		Operations: map[string]*configs.Operation{
			"produceOrders": {ID: "produceOrders", Action: "send", Channel: "orders", Cluster: "shop", Plain: true, OAuthScopes: [][]string{{"orders:write"}}},
			"consumeOrders": {ID: "consumeOrders", Action: "receive", Channel: "orders", Cluster: "shop", OAuthScopes: [][]string{{"orders:read"}}},
			"auditOrders":   {ID: "auditOrders", Action: "receive", Channel: "orders", Cluster: "shop", OAuthScopes: [][]string{{"orders:read", "orders:audit"}, {"audit:all"}}},
			"plainOnly":     {ID: "plainOnly", Action: "receive", Channel: "payments", Cluster: "shop", Plain: true},
		},
		LoadedAt: time.Now(),
	}
}

func newVerifiers(t *testing.T, snap *configs.Snapshot) *OAuth {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := NewOAuth(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func verifyMsg(v *OAuth, snap *configs.Snapshot, msg []byte) Result {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return v.Verify(ctx, snap, msg, time.Now())
}

// refused checks a refusal: its cause, and that the cause shows no part of the token.
func refused(t *testing.T, name string, res Result, cause, tok string) {
	t.Helper()
	if res.ID != nil {
		t.Fatalf("%s: admitted %+v, want refused (%s)", name, *res.ID, cause)
	}
	if !strings.Contains(res.Cause, cause) {
		t.Fatalf("%s: cause %q, want %q", name, res.Cause, cause)
	}
	for _, part := range strings.Split(tok, ".") {
		if len(part) > 8 && strings.Contains(res.Cause+res.User, part) {
			t.Fatalf("%s: the cause shows the token: %q", name, res.Cause)
		}
	}
}

// I2: tokens of an issuer found by discovery over HTTPS, RS256 and ES256:
// the identity's principal, tenant, operations and expiry.
func TestOAuthVerifyValid(t *testing.T) {
	ti := testkit.NewIssuer(t)
	rs, es := testkit.NewSigningKey(t, "rs-1", jose.RS256), testkit.NewSigningKey(t, "es-1", jose.ES256)
	ti.Publish(rs, es)
	snap := oauthSnap(issuerConfig(ti))
	v := newVerifiers(t, snap)
	if ti.DocHits.Load() != 1 || ti.JWKSHits.Load() != 1 {
		t.Fatalf("discovery fetched %d times, jwks %d times at start; want once each", ti.DocHits.Load(), ti.JWKSHits.Load())
	}
	exp := time.Now().Add(30 * time.Minute).Unix()
	for _, k := range []*testkit.SigningKey{rs, es} {
		tok := k.Sign(t, testkit.Claims(ti.URL, map[string]any{"exp": exp}))
		res := verifyMsg(v, snap, bearerMsg(tok))
		if res.ID == nil {
			t.Fatalf("%s: refused: %s", k.Alg, res.Cause)
		}
		id := res.ID
		if id.Principal != "billing" || id.Mechanism != "oauthbearer" || id.Tenant != "acme" || res.User != "billing" {
			t.Fatalf("%s: identity %+v", k.Alg, *id)
		}
		if !reflect.DeepEqual(id.Ops, []string{"consumeOrders", "produceOrders"}) {
			t.Fatalf("%s: ops %v", k.Alg, id.Ops)
		}
		if !id.Expires.Equal(time.Unix(exp, 0)) {
			t.Fatalf("%s: expires %v, want %v", k.Alg, id.Expires, time.Unix(exp, 0))
		}
		if id.token != tok {
			t.Fatalf("%s: the identity does not keep the token for reloads", k.Alg)
		}
	}
	// Cached: no fetch for the next tokens.
	if ti.DocHits.Load() != 1 || ti.JWKSHits.Load() != 1 {
		t.Fatalf("fetched again: discovery %d, jwks %d", ti.DocHits.Load(), ti.JWKSHits.Load())
	}
	// An authorization id equal to the subject is accepted; another is refused.
	tok := rs.Sign(t, testkit.Claims(ti.URL, nil))
	if res := verifyMsg(v, snap, []byte("n,a=billing,\x01auth=Bearer "+tok+"\x01\x01")); res.ID == nil {
		t.Fatalf("authzid = sub refused: %s", res.Cause)
	}
	refused(t, "authzid", verifyMsg(v, snap, []byte("n,a=someone,\x01auth=Bearer "+tok+"\x01\x01")), "authorization id differs", tok)
	// SASL extensions beside auth are ignored.
	if res := verifyMsg(v, snap, []byte("n,,\x01traceid=42\x01auth=Bearer "+tok+"\x01\x01")); res.ID == nil {
		t.Fatalf("with an extension: refused: %s", res.Cause)
	}
}

// I2, I6: every refusal has its own cause, never showing the token.
func TestOAuthVerifyRefused(t *testing.T) {
	ti := testkit.NewIssuer(t)
	rs := testkit.NewSigningKey(t, "rs-1", jose.RS256)
	ti.Publish(rs)
	rogue := testkit.NewSigningKey(t, "rogue", jose.RS256)    // never published
	impostor := testkit.NewSigningKey(t, "rs-1", jose.RS256)  // a published kid, another key
	other := testkit.NewSigningKey(t, "es-other", jose.ES256) // another issuer's
	snap := oauthSnap(issuerConfig(ti))
	v := newVerifiers(t, snap)
	iss := ti.URL
	cases := []struct {
		name, tok, cause string
	}{
		{"unknown signing key", rogue.Sign(t, testkit.Claims(iss, nil)), "key unknown to issuer"},
		{"bad signature", impostor.Sign(t, testkit.Claims(iss, nil)), "signature not verified"},
		{"another issuer's key", other.Sign(t, testkit.Claims("https://login.example.net", nil)), "unknown issuer"},
		{"without exp", rs.Sign(t, testkit.Claims(iss, map[string]any{"exp": nil})), "without exp"},
		{"exp not a number", rs.Sign(t, testkit.Claims(iss, map[string]any{"exp": "tomorrow"})), "exp is not a number"},
		{"expired", rs.Sign(t, testkit.Claims(iss, map[string]any{"exp": time.Now().Add(-time.Minute).Unix()})), "token expired"},
		{"not yet valid", rs.Sign(t, testkit.Claims(iss, map[string]any{"nbf": time.Now().Add(time.Hour).Unix()})), "not valid yet"},
		{"other audience", rs.Sign(t, testkit.Claims(iss, map[string]any{"aud": "billing-api"})), "audience"},
		{"other audiences", rs.Sign(t, testkit.Claims(iss, map[string]any{"aud": []string{"a", "b"}})), "audience"},
		{"no audience", rs.Sign(t, testkit.Claims(iss, map[string]any{"aud": nil})), "audience"},
		{"alg none", testkit.Unsigned("none", "rs-1", testkit.Claims(iss, nil), ""), "algorithm not allowed: none"},
		{"alg none with a signature", testkit.Unsigned("none", "rs-1", testkit.Claims(iss, nil), "c2ln"), "algorithm not allowed: none"},
		{"alg HS256", testkit.Unsigned("HS256", "rs-1", testkit.Claims(iss, nil), "c2lnbmF0dXJl"), "algorithm not allowed: HS256"},
		{"RS256 without signature", testkit.Unsigned("RS256", "rs-1", testkit.Claims(iss, nil), ""), "without signature"},
		{"tenant claim missing", rs.Sign(t, testkit.Claims(iss, map[string]any{"org": nil})), `without the tenant claim "org"`},
		{"tenant claim not a string", rs.Sign(t, testkit.Claims(iss, map[string]any{"org": 42})), "not a string"},
		{"no sub", rs.Sign(t, testkit.Claims(iss, map[string]any{"sub": nil})), "without sub"},
		{"no scope", rs.Sign(t, testkit.Claims(iss, map[string]any{"scope": nil})), "admit no operation"},
		{"scopes of no operation", rs.Sign(t, testkit.Claims(iss, map[string]any{"scope": "orders:audit profile"})), "admit no operation"},
		{"unknown issuer", rs.Sign(t, testkit.Claims("https://elsewhere.example", nil)), "unknown issuer"},
		{"no iss", rs.Sign(t, testkit.Claims(iss, map[string]any{"iss": nil})), "unknown issuer"},
		{"not a JWT", "abc.def", "malformed token"},
		{"JSON serialization", `{"payload":"e30","signatures":[]}`, "malformed token"},
	}
	for _, c := range cases {
		res := verifyMsg(v, snap, bearerMsg(c.tok))
		refused(t, c.name, res, c.cause, c.tok)
	}
	// The same, through verifyToken (reload) directly.
	res := v.verifyToken(context.Background(), snap, rs.Sign(t, testkit.Claims(iss, map[string]any{"exp": nil})), time.Now())
	refused(t, "verifyToken without exp", res, "without exp", "")
	// An expiry just past: now is the caller's.
	tok := rs.Sign(t, testkit.Claims(iss, map[string]any{"exp": time.Now().Add(time.Minute).Unix()}))
	if res := v.verifyToken(context.Background(), snap, tok, time.Now().Add(2*time.Minute)); res.ID != nil {
		t.Fatal("a token past exp at the caller's now is admitted")
	}
}

// RFC 7628: a message not of that form is refused before anything else.
func TestOAuthMalformedMessage(t *testing.T) {
	v := &OAuth{}
	snap := oauthSnap(configs.Issuer{Name: "x", JWKS: "file:/nonexistent", Audience: "kafka", TenantClaim: "org"})
	for _, m := range []string{
		"",
		"\x01",
		"n,,",
		"n,,auth=Bearer abc.def.ghi\x01\x01",
		"n,,\x01auth=Bearer abc.def.ghi\x01",
		"n,,\x01auth=Basic dXNlcjpwYXNz\x01\x01",
		"n,,\x01auth=Bearer \x01\x01",
		"n,,\x01auth=Bearer a.b.c\x01auth=Bearer a.b.c\x01\x01",
		"n,,\x01user=x\x01\x01",
		"p=tls-unique,,\x01auth=Bearer a.b.c\x01\x01",
		"n,x=y,\x01auth=Bearer a.b.c\x01\x01",
		"n,a=bad=name,\x01auth=Bearer a.b.c\x01\x01",
		"n,,\x01au th=Bearer a.b.c\x01\x01",
		"n,,\x01" + "auth=Bearer " + strings.Repeat("a", oauthMaxToken+1) + "\x01\x01",
	} {
		res := v.Verify(context.Background(), snap, []byte(m), time.Now())
		if res.ID != nil || res.Cause != "malformed OAUTHBEARER message" {
			t.Fatalf("%q: %+v, want a malformed message", m, res)
		}
	}
	z, tok, ok := parseOAuthBearer([]byte("y,a=us=2Cer=3D1,\x01host=h\x01auth=bearer  a.b.c \x01\x01"))
	if !ok || z != "us,er=1" || tok != "a.b.c" {
		t.Fatalf("parse: %q %q %v", z, tok, ok)
	}
}

// I4: the tenant is returned as the claim says; the caller refuses one
// that is not letters, digits and '-'.
func TestOAuthTenantAsIs(t *testing.T) {
	ti := testkit.NewIssuer(t)
	rs := testkit.NewSigningKey(t, "rs-1", jose.RS256)
	ti.Publish(rs)
	snap := oauthSnap(issuerConfig(ti))
	v := newVerifiers(t, snap)
	res := verifyMsg(v, snap, bearerMsg(rs.Sign(t, testkit.Claims(ti.URL, map[string]any{"org": "acme_corp"}))))
	if res.ID == nil || res.ID.Tenant != "acme_corp" {
		t.Fatalf("tenant acme_corp: %+v", res)
	}
	if configs.ValidTenant(res.ID.Tenant) {
		t.Fatal("acme_corp would be admitted by the caller")
	}
}

// I2, C2: the scopes (scope string, scp list or string) pick the operations
// one of whose alternatives they carry in full.
func TestOAuthScopesSelectOperations(t *testing.T) {
	ti := testkit.NewIssuer(t)
	es := testkit.NewSigningKey(t, "es-1", jose.ES256)
	ti.Publish(es)
	snap := oauthSnap(issuerConfig(ti))
	v := newVerifiers(t, snap)
	cases := []struct {
		edits map[string]any
		ops   []string
	}{
		{map[string]any{"scope": "orders:write"}, []string{"produceOrders"}},
		{map[string]any{"scope": "orders:read"}, []string{"consumeOrders"}},
		{map[string]any{"scope": "orders:audit"}, nil},
		{map[string]any{"scope": nil, "scp": []string{"orders:read", "orders:audit"}}, []string{"auditOrders", "consumeOrders"}},
		{map[string]any{"scope": nil, "scp": "audit:all"}, []string{"auditOrders"}},
		{map[string]any{"scope": "orders:write", "scp": []string{"orders:read"}}, []string{"consumeOrders", "produceOrders"}},
		{map[string]any{"scope": "openid  orders:write   profile"}, []string{"produceOrders"}},
	}
	for _, c := range cases {
		tok := es.Sign(t, testkit.Claims(ti.URL, c.edits))
		res := verifyMsg(v, snap, bearerMsg(tok))
		if c.ops == nil {
			refused(t, fmt.Sprint(c.edits), res, "admit no operation", tok)
			continue
		}
		if res.ID == nil {
			t.Fatalf("%v: refused: %s", c.edits, res.Cause)
		}
		if !reflect.DeepEqual(res.ID.Ops, c.ops) {
			t.Fatalf("%v: ops %v, want %v", c.edits, res.ID.Ops, c.ops)
		}
	}
	tok := es.Sign(t, testkit.Claims(ti.URL, map[string]any{"scp": 42}))
	refused(t, "scp a number", verifyMsg(v, snap, bearerMsg(tok)), "neither a string nor a list", tok)
}

// I2: an issuer with a static JWKS file ("file:/path"), with and without
// an expected iss.
func TestOAuthStaticJWKS(t *testing.T) {
	es := testkit.NewSigningKey(t, "static-1", jose.ES256)
	rs := testkit.NewSigningKey(t, "static-2", jose.RS256)
	b, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{es.Public(), rs.Public(),
		{Key: []byte("a shared secret, never used"), KeyID: "hmac", Algorithm: "HS256"}}})
	file := testkit.WriteFile(t, t.TempDir(), "jwks.json", b)
	is := configs.Issuer{Name: "static", JWKS: "file:" + file, Issuer: "https://static.example", Audience: "kafka", TenantClaim: "tenant"}
	snap := oauthSnap(is)
	v := newVerifiers(t, snap)
	claims := testkit.Claims("https://static.example", map[string]any{"org": nil, "tenant": "globex"})
	for _, k := range []*testkit.SigningKey{es, rs} {
		res := verifyMsg(v, snap, bearerMsg(k.Sign(t, claims)))
		if res.ID == nil || res.ID.Tenant != "globex" {
			t.Fatalf("static %s: %+v", k.Alg, res)
		}
	}
	tok := es.Sign(t, testkit.Claims("https://other.example", map[string]any{"tenant": "globex"}))
	refused(t, "static, other iss", verifyMsg(v, snap, bearerMsg(tok)), "unknown issuer", tok)
	// An HS256 token "signed" with the key set's symmetric key is refused.
	tok = testkit.Unsigned("HS256", "hmac", claims, "c2ln")
	refused(t, "static HS256", verifyMsg(v, snap, bearerMsg(tok)), "algorithm not allowed", tok)

	// Without issuer: any iss, the keys decide.
	is2 := is
	is2.Issuer = ""
	snap2 := oauthSnap(is2)
	v2 := newVerifiers(t, snap2)
	if res := verifyMsg(v2, snap2, bearerMsg(es.Sign(t, testkit.Claims("whoever", map[string]any{"tenant": "globex"})))); res.ID == nil {
		t.Fatalf("static without issuer: %s", res.Cause)
	}
	// A file that is not a key set is a configuration error.
	bad := is
	bad.JWKS = "file:" + testkit.WriteFile(t, t.TempDir(), "bad.json", []byte(`{"keys":[]}`))
	if _, err := NewOAuth(context.Background(), oauthSnap(bad)); err == nil {
		t.Fatal("an empty key set accepted")
	}
}

// I2: key rotation: a token whose kid the cached set does not hold makes
// the JWKS fetched again; unknown kids are not fetched more than once per
// refetchEvery.
func TestOAuthKeyRotation(t *testing.T) {
	ti := testkit.NewIssuer(t)
	k1 := testkit.NewSigningKey(t, "k1", jose.RS256)
	ti.Publish(k1)
	snap := oauthSnap(issuerConfig(ti))
	v := newVerifiers(t, snap)
	if res := verifyMsg(v, snap, bearerMsg(k1.Sign(t, testkit.Claims(ti.URL, nil)))); res.ID == nil {
		t.Fatal(res.Cause)
	}
	// Unknown kids right after a fetch: refused without a fetch (rate).
	hits := ti.JWKSHits.Load()
	rogue := testkit.NewSigningKey(t, "rogue", jose.ES256)
	for i := 0; i < 5; i++ {
		tok := rogue.Sign(t, testkit.Claims(ti.URL, nil))
		refused(t, "rogue", verifyMsg(v, snap, bearerMsg(tok)), "key unknown", tok)
	}
	if got := ti.JWKSHits.Load() - hits; got != 0 {
		t.Fatalf("unknown kids within refetchEvery fetched the JWKS %d times", got)
	}
	// The issuer rotates: a new kid appears; past refetchEvery it is fetched.
	v.refetchEvery = 0
	k2 := testkit.NewSigningKey(t, "k2", jose.ES256)
	ti.Publish(k2)
	res := verifyMsg(v, snap, bearerMsg(k2.Sign(t, testkit.Claims(ti.URL, nil))))
	if res.ID == nil {
		t.Fatalf("rotated key: %s", res.Cause)
	}
	if got := ti.JWKSHits.Load() - hits; got != 1 {
		t.Fatalf("rotation fetched the JWKS %d times, want 1", got)
	}
	// Concurrent unknown kids: one fetch at a time, never one per token.
	v.refetchEvery = time.Hour
	v.issuers[issuerConfig(ti)].triedAt = time.Time{}
	hits = ti.JWKSHits.Load()
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			verifyMsg(v, snap, bearerMsg(testkit.Unsigned("RS256", fmt.Sprint("made-up-", i), testkit.Claims(ti.URL, nil), "c2ln")))
		}()
	}
	wg.Wait()
	if got := ti.JWKSHits.Load() - hits; got != 1 {
		t.Fatalf("20 unknown kids fetched the JWKS %d times, want 1", got)
	}
	// Keys older than keysTTL are fetched again: a withdrawn key stops verifying.
	ti.Withdraw("k1")
	v.keysTTL, v.refetchEvery = 0, 0
	tok := k1.Sign(t, testkit.Claims(ti.URL, nil))
	refused(t, "withdrawn", verifyMsg(v, snap, bearerMsg(tok)), "key unknown", tok)
}

// A discovery that fails at start is no error; it is fetched when a token
// needs it, at most once per refetchEvery.
func TestOAuthDiscoveryRetried(t *testing.T) {
	ti := testkit.NewIssuer(t)
	k := testkit.NewSigningKey(t, "k1", jose.ES256)
	ti.Publish(k)
	ti.Down.Store(true)
	snap := oauthSnap(issuerConfig(ti))
	v := newVerifiers(t, snap)
	tok := k.Sign(t, testkit.Claims(ti.URL, nil))
	refused(t, "issuer down", verifyMsg(v, snap, bearerMsg(tok)), `keys of issuer "test" unavailable`, tok)
	ti.Down.Store(false)
	hits := ti.DocHits.Load()
	refused(t, "within refetchEvery", verifyMsg(v, snap, bearerMsg(tok)), "unavailable", tok)
	if ti.DocHits.Load() != hits {
		t.Fatal("fetched again within refetchEvery")
	}
	v.refetchEvery = 0
	if res := verifyMsg(v, snap, bearerMsg(tok)); res.ID == nil {
		t.Fatalf("issuer back: %s", res.Cause)
	}
	// Configuration errors are errors.
	bad := issuerConfig(ti)
	bad.CAFile = filepath.Join(t.TempDir(), "missing.crt")
	if _, err := NewOAuth(context.Background(), oauthSnap(bad)); err == nil {
		t.Fatal("a missing ca_file accepted")
	}
	// Without the issuer's CA, the discovery over HTTPS fails (no error at start).
	noCA := issuerConfig(ti)
	noCA.CAFile = ""
	snap3 := oauthSnap(noCA)
	v3 := newVerifiers(t, snap3)
	refused(t, "unknown CA", verifyMsg(v3, snap3, bearerMsg(tok)), "unavailable", tok)
}

// S2: at a reload, a token is verified again by the issuers in force: an
// issuer removed, an audience changed, a key withdrawn refuse it.
func TestOAuthReverifyOnReload(t *testing.T) {
	ti := testkit.NewIssuer(t)
	k1, k2 := testkit.NewSigningKey(t, "k1", jose.RS256), testkit.NewSigningKey(t, "k2", jose.ES256)
	ti.Publish(k1, k2)
	snap := oauthSnap(issuerConfig(ti))
	v := newVerifiers(t, snap)
	tok := k1.Sign(t, testkit.Claims(ti.URL, nil))
	res := verifyMsg(v, snap, bearerMsg(tok))
	if res.ID == nil {
		t.Fatal(res.Cause)
	}
	ctx := context.Background()
	// The same issuers: still accepted.
	same := oauthSnap(issuerConfig(ti))
	if r := v.verifyToken(ctx, same, res.ID.token, time.Now()); r.ID == nil || r.ID.Principal != "billing" {
		t.Fatalf("reload, same issuers: %+v", r)
	}
	// A key withdrawn by the issuer: the reload fetches the keys again.
	ti.Withdraw("k1")
	hits := ti.JWKSHits.Load()
	refused(t, "key withdrawn", v.verifyToken(ctx, oauthSnap(issuerConfig(ti)), tok, time.Now()), "key unknown", tok)
	if ti.JWKSHits.Load() == hits {
		t.Fatal("the reload did not fetch the keys again")
	}
	ti.Publish(k1) // back, seen at the next reload
	// The audience changed.
	moved := issuerConfig(ti)
	moved.Audience = "kafka-v2"
	refused(t, "audience changed", v.verifyToken(ctx, oauthSnap(moved), tok, time.Now()), "audience", tok)
	// The issuer removed.
	refused(t, "issuer removed", v.verifyToken(ctx, oauthSnap(), tok, time.Now()), "no auth.issuers", tok)
	static := configs.Issuer{Name: "static", JWKS: "file:" + testkit.WriteFile(t, t.TempDir(), "jwks.json", []byte(`{"keys":[`+mustJSON(t, k2.Public())+`]}`)), Audience: "kafka", TenantClaim: "org", Issuer: "https://static.example"}
	refused(t, "issuer replaced", v.verifyToken(ctx, oauthSnap(static), tok, time.Now()), "unknown issuer", tok)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// S2: Recheck says why a token no longer stands after a reload: the
// issuers gone, the token refused, another tenant read from it, other
// operations opened by its scopes.
func TestOAuthRecheck(t *testing.T) {
	ti := testkit.NewIssuer(t)
	snap := oauthSnap(issuerConfig(ti))
	v := newVerifiers(t, snap)
	tok := ti.Key.Sign(t, testkit.Claims(ti.URL, map[string]any{"team": "blue"}))
	res := verifyMsg(v, snap, bearerMsg(tok))
	if res.ID == nil {
		t.Fatal(res.Cause)
	}
	id := res.ID
	ctx := context.Background()
	if got := v.Recheck(ctx, oauthSnap(issuerConfig(ti)), id, time.Now()); got != "" {
		t.Fatalf("the same issuers: %q", got)
	}
	var none *OAuth
	if got := none.Recheck(ctx, oauthSnap(), id, time.Now()); got != "no issuer in force" {
		t.Fatalf("no verifier: %q", got)
	}
	if got := v.Recheck(ctx, snap, id, time.Now().Add(2*time.Hour)); got != "token no longer accepted: token expired" {
		t.Fatalf("expired at the reload: %q", got)
	}
	team := issuerConfig(ti)
	team.TenantClaim = "team"
	if got := v.Recheck(ctx, oauthSnap(team), id, time.Now()); got != "token now names another principal" {
		t.Fatalf("tenant claim changed: %q", got)
	}
	moved := oauthSnap(issuerConfig(ti))
	moved.Operations["consumeOrders"].OAuthScopes = [][]string{{"orders:consume"}}
	if got := v.Recheck(ctx, moved, id, time.Now()); got != "token now opens other operations" {
		t.Fatalf("scopes of an operation changed: %q", got)
	}
}
