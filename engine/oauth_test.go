package engine

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	jose "github.com/go-jose/go-jose/v4"
)

// testIssuer is an OpenID provider on loopback over HTTPS: its discovery
// document and its JWKS (the published keys, changed by the test).
type testIssuer struct {
	t        *testing.T
	srv      *httptest.Server
	caFile   string // the server's certificate, for ca_file
	mu       sync.Mutex
	keys     []*testSigningKey // published
	down     atomic.Bool       // answers 503 while set
	jwksHits atomic.Int32
	docHits  atomic.Int32
}

// testSigningKey is one of the issuer's signing keys (or a stranger's).
type testSigningKey struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv any
}

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	ti := &testIssuer{t: t}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		ti.docHits.Add(1)
		if ti.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"issuer": ti.srv.URL, "jwks_uri": ti.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		ti.jwksHits.Add(1)
		if ti.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(ti.jwks())
	})
	ti.srv = httptest.NewUnstartedServer(mux)
	ti.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // a client without the CA: expected
	ti.srv.StartTLS()
	t.Cleanup(ti.srv.Close)
	ti.caFile = writeFile(t, t.TempDir(), "issuer-ca.crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ti.srv.Certificate().Raw}))
	return ti
}

// discovery is the URL of the OpenID configuration; iss the issuer's name.
func (ti *testIssuer) discovery() string { return ti.srv.URL + "/.well-known/openid-configuration" }
func (ti *testIssuer) iss() string       { return ti.srv.URL }

// jwks is the published key set.
func (ti *testIssuer) jwks() []byte {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	var set jose.JSONWebKeySet
	for _, k := range ti.keys {
		set.Keys = append(set.Keys, k.public())
	}
	b, err := json.Marshal(set)
	if err != nil {
		panic(err)
	}
	return b
}

// publish adds keys to the JWKS; withdraw removes one.
func (ti *testIssuer) publish(ks ...*testSigningKey) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	ti.keys = append(ti.keys, ks...)
}

func (ti *testIssuer) withdraw(kid string) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	var keep []*testSigningKey
	for _, k := range ti.keys {
		if k.kid != kid {
			keep = append(keep, k)
		}
	}
	ti.keys = keep
}

// config is the issuer as flexway.yaml declares it.
func (ti *testIssuer) config() configs.Issuer {
	return configs.Issuer{Name: "test", Discovery: ti.discovery(), Audience: "kafka", TenantClaim: "org", CAFile: ti.caFile}
}

func newSigningKey(t *testing.T, kid string, alg jose.SignatureAlgorithm) *testSigningKey {
	t.Helper()
	k := &testSigningKey{kid: kid, alg: alg}
	var err error
	switch alg {
	case jose.RS256:
		k.priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.ES256:
		k.priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		t.Fatalf("no test key for %s", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (k *testSigningKey) public() jose.JSONWebKey {
	jwk := jose.JSONWebKey{Key: k.priv, KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"}
	return jwk.Public()
}

// sign makes a compact JWS of claims with the key (its kid in the header).
func (k *testSigningKey) sign(t *testing.T, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign(b)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// claims are a valid token's claims for iss; edits change them (a nil value deletes).
func testClaims(iss string, edits map[string]any) map[string]any {
	c := map[string]any{
		"iss":   iss,
		"sub":   "billing",
		"aud":   "kafka",
		"org":   "acme",
		"exp":   time.Now().Add(time.Hour).Unix(),
		"iat":   time.Now().Unix(),
		"scope": "orders:write orders:read",
	}
	for k, v := range edits {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// unsignedToken crafts alg (e.g. "none") by hand: header.payload.signature.
func unsignedToken(t *testing.T, alg, kid string, claims map[string]any, sig string) string {
	t.Helper()
	h, _ := json.Marshal(map[string]string{"alg": alg, "kid": kid, "typ": "JWT"})
	p, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(p) + "." + sig
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

func newVerifiers(t *testing.T, snap *configs.Snapshot) *oauthVerifiers {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := newOAuthVerifiers(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func verifyMsg(v *oauthVerifiers, snap *configs.Snapshot, msg []byte) authResult {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return v.verify(ctx, snap, msg, time.Now())
}

// refused checks a refusal: its cause, and that the cause shows no part of the token.
func refused(t *testing.T, name string, res authResult, cause, tok string) {
	t.Helper()
	if res.id != nil {
		t.Fatalf("%s: admitted %+v, want refused (%s)", name, *res.id, cause)
	}
	if !strings.Contains(res.cause, cause) {
		t.Fatalf("%s: cause %q, want %q", name, res.cause, cause)
	}
	for _, part := range strings.Split(tok, ".") {
		if len(part) > 8 && strings.Contains(res.cause+res.user, part) {
			t.Fatalf("%s: the cause shows the token: %q", name, res.cause)
		}
	}
}

// I2: tokens of an issuer found by discovery over HTTPS, RS256 and ES256:
// the identity's principal, tenant, operations and expiry.
func TestOAuthVerifyValid(t *testing.T) {
	ti := newTestIssuer(t)
	rs, es := newSigningKey(t, "rs-1", jose.RS256), newSigningKey(t, "es-1", jose.ES256)
	ti.publish(rs, es)
	snap := oauthSnap(ti.config())
	v := newVerifiers(t, snap)
	if ti.docHits.Load() != 1 || ti.jwksHits.Load() != 1 {
		t.Fatalf("discovery fetched %d times, jwks %d times at start; want once each", ti.docHits.Load(), ti.jwksHits.Load())
	}
	exp := time.Now().Add(30 * time.Minute).Unix()
	for _, k := range []*testSigningKey{rs, es} {
		tok := k.sign(t, testClaims(ti.iss(), map[string]any{"exp": exp}))
		res := verifyMsg(v, snap, bearerMsg(tok))
		if res.id == nil {
			t.Fatalf("%s: refused: %s", k.alg, res.cause)
		}
		id := res.id
		if id.principal != "billing" || id.mechanism != "oauthbearer" || id.tenant != "acme" || res.user != "billing" {
			t.Fatalf("%s: identity %+v", k.alg, *id)
		}
		if !reflect.DeepEqual(id.ops, []string{"consumeOrders", "produceOrders"}) {
			t.Fatalf("%s: ops %v", k.alg, id.ops)
		}
		if !id.expires.Equal(time.Unix(exp, 0)) {
			t.Fatalf("%s: expires %v, want %v", k.alg, id.expires, time.Unix(exp, 0))
		}
		if id.token != tok {
			t.Fatalf("%s: the identity does not keep the token for reloads", k.alg)
		}
	}
	// Cached: no fetch for the next tokens.
	if ti.docHits.Load() != 1 || ti.jwksHits.Load() != 1 {
		t.Fatalf("fetched again: discovery %d, jwks %d", ti.docHits.Load(), ti.jwksHits.Load())
	}
	// An authorization id equal to the subject is accepted; another is refused.
	tok := rs.sign(t, testClaims(ti.iss(), nil))
	if res := verifyMsg(v, snap, []byte("n,a=billing,\x01auth=Bearer "+tok+"\x01\x01")); res.id == nil {
		t.Fatalf("authzid = sub refused: %s", res.cause)
	}
	refused(t, "authzid", verifyMsg(v, snap, []byte("n,a=someone,\x01auth=Bearer "+tok+"\x01\x01")), "authorization id differs", tok)
	// SASL extensions beside auth are ignored.
	if res := verifyMsg(v, snap, []byte("n,,\x01traceid=42\x01auth=Bearer "+tok+"\x01\x01")); res.id == nil {
		t.Fatalf("with an extension: refused: %s", res.cause)
	}
}

// I2, I6: every refusal has its own cause, never showing the token.
func TestOAuthVerifyRefused(t *testing.T) {
	ti := newTestIssuer(t)
	rs := newSigningKey(t, "rs-1", jose.RS256)
	ti.publish(rs)
	rogue := newSigningKey(t, "rogue", jose.RS256)    // never published
	impostor := newSigningKey(t, "rs-1", jose.RS256)  // a published kid, another key
	other := newSigningKey(t, "es-other", jose.ES256) // another issuer's
	snap := oauthSnap(ti.config())
	v := newVerifiers(t, snap)
	iss := ti.iss()
	cases := []struct {
		name, tok, cause string
	}{
		{"unknown signing key", rogue.sign(t, testClaims(iss, nil)), "key unknown to issuer"},
		{"bad signature", impostor.sign(t, testClaims(iss, nil)), "signature not verified"},
		{"another issuer's key", other.sign(t, testClaims("https://login.example.net", nil)), "unknown issuer"},
		{"without exp", rs.sign(t, testClaims(iss, map[string]any{"exp": nil})), "without exp"},
		{"exp not a number", rs.sign(t, testClaims(iss, map[string]any{"exp": "tomorrow"})), "exp is not a number"},
		{"expired", rs.sign(t, testClaims(iss, map[string]any{"exp": time.Now().Add(-time.Minute).Unix()})), "token expired"},
		{"not yet valid", rs.sign(t, testClaims(iss, map[string]any{"nbf": time.Now().Add(time.Hour).Unix()})), "not valid yet"},
		{"other audience", rs.sign(t, testClaims(iss, map[string]any{"aud": "billing-api"})), "audience"},
		{"other audiences", rs.sign(t, testClaims(iss, map[string]any{"aud": []string{"a", "b"}})), "audience"},
		{"no audience", rs.sign(t, testClaims(iss, map[string]any{"aud": nil})), "audience"},
		{"alg none", unsignedToken(t, "none", "rs-1", testClaims(iss, nil), ""), "algorithm not allowed: none"},
		{"alg none with a signature", unsignedToken(t, "none", "rs-1", testClaims(iss, nil), "c2ln"), "algorithm not allowed: none"},
		{"alg HS256", unsignedToken(t, "HS256", "rs-1", testClaims(iss, nil), "c2lnbmF0dXJl"), "algorithm not allowed: HS256"},
		{"RS256 without signature", unsignedToken(t, "RS256", "rs-1", testClaims(iss, nil), ""), "without signature"},
		{"tenant claim missing", rs.sign(t, testClaims(iss, map[string]any{"org": nil})), `without the tenant claim "org"`},
		{"tenant claim not a string", rs.sign(t, testClaims(iss, map[string]any{"org": 42})), "not a string"},
		{"no sub", rs.sign(t, testClaims(iss, map[string]any{"sub": nil})), "without sub"},
		{"no scope", rs.sign(t, testClaims(iss, map[string]any{"scope": nil})), "admit no operation"},
		{"scopes of no operation", rs.sign(t, testClaims(iss, map[string]any{"scope": "orders:audit profile"})), "admit no operation"},
		{"unknown issuer", rs.sign(t, testClaims("https://elsewhere.example", nil)), "unknown issuer"},
		{"no iss", rs.sign(t, testClaims(iss, map[string]any{"iss": nil})), "unknown issuer"},
		{"not a JWT", "abc.def", "malformed token"},
		{"JSON serialization", `{"payload":"e30","signatures":[]}`, "malformed token"},
	}
	for _, c := range cases {
		res := verifyMsg(v, snap, bearerMsg(c.tok))
		refused(t, c.name, res, c.cause, c.tok)
	}
	// The same, through verifyToken (reload) directly.
	res := v.verifyToken(context.Background(), snap, rs.sign(t, testClaims(iss, map[string]any{"exp": nil})), time.Now())
	refused(t, "verifyToken without exp", res, "without exp", "")
	// An expiry just past: now is the caller's.
	tok := rs.sign(t, testClaims(iss, map[string]any{"exp": time.Now().Add(time.Minute).Unix()}))
	if res := v.verifyToken(context.Background(), snap, tok, time.Now().Add(2*time.Minute)); res.id != nil {
		t.Fatal("a token past exp at the caller's now is admitted")
	}
}

// RFC 7628: a message not of that form is refused before anything else.
func TestOAuthMalformedMessage(t *testing.T) {
	v := &oauthVerifiers{}
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
		res := v.verify(context.Background(), snap, []byte(m), time.Now())
		if res.id != nil || res.cause != "malformed OAUTHBEARER message" {
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
	ti := newTestIssuer(t)
	rs := newSigningKey(t, "rs-1", jose.RS256)
	ti.publish(rs)
	snap := oauthSnap(ti.config())
	v := newVerifiers(t, snap)
	res := verifyMsg(v, snap, bearerMsg(rs.sign(t, testClaims(ti.iss(), map[string]any{"org": "acme_corp"}))))
	if res.id == nil || res.id.tenant != "acme_corp" {
		t.Fatalf("tenant acme_corp: %+v", res)
	}
	if validTenant(res.id.tenant) {
		t.Fatal("acme_corp would be admitted by the caller")
	}
}

// I2, C2: the scopes (scope string, scp list or string) pick the operations
// one of whose alternatives they carry in full.
func TestOAuthScopesSelectOperations(t *testing.T) {
	ti := newTestIssuer(t)
	es := newSigningKey(t, "es-1", jose.ES256)
	ti.publish(es)
	snap := oauthSnap(ti.config())
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
		tok := es.sign(t, testClaims(ti.iss(), c.edits))
		res := verifyMsg(v, snap, bearerMsg(tok))
		if c.ops == nil {
			refused(t, fmt.Sprint(c.edits), res, "admit no operation", tok)
			continue
		}
		if res.id == nil {
			t.Fatalf("%v: refused: %s", c.edits, res.cause)
		}
		if !reflect.DeepEqual(res.id.ops, c.ops) {
			t.Fatalf("%v: ops %v, want %v", c.edits, res.id.ops, c.ops)
		}
	}
	tok := es.sign(t, testClaims(ti.iss(), map[string]any{"scp": 42}))
	refused(t, "scp a number", verifyMsg(v, snap, bearerMsg(tok)), "neither a string nor a list", tok)
}

// I2: an issuer with a static JWKS file ("file:/path"), with and without
// an expected iss.
func TestOAuthStaticJWKS(t *testing.T) {
	es := newSigningKey(t, "static-1", jose.ES256)
	rs := newSigningKey(t, "static-2", jose.RS256)
	b, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{es.public(), rs.public(),
		{Key: []byte("a shared secret, never used"), KeyID: "hmac", Algorithm: "HS256"}}})
	file := writeFile(t, t.TempDir(), "jwks.json", b)
	is := configs.Issuer{Name: "static", JWKS: "file:" + file, Issuer: "https://static.example", Audience: "kafka", TenantClaim: "tenant"}
	snap := oauthSnap(is)
	v := newVerifiers(t, snap)
	claims := testClaims("https://static.example", map[string]any{"org": nil, "tenant": "globex"})
	for _, k := range []*testSigningKey{es, rs} {
		res := verifyMsg(v, snap, bearerMsg(k.sign(t, claims)))
		if res.id == nil || res.id.tenant != "globex" {
			t.Fatalf("static %s: %+v", k.alg, res)
		}
	}
	tok := es.sign(t, testClaims("https://other.example", map[string]any{"tenant": "globex"}))
	refused(t, "static, other iss", verifyMsg(v, snap, bearerMsg(tok)), "unknown issuer", tok)
	// An HS256 token "signed" with the key set's symmetric key is refused.
	tok = unsignedToken(t, "HS256", "hmac", claims, "c2ln")
	refused(t, "static HS256", verifyMsg(v, snap, bearerMsg(tok)), "algorithm not allowed", tok)

	// Without issuer: any iss, the keys decide.
	is2 := is
	is2.Issuer = ""
	snap2 := oauthSnap(is2)
	v2 := newVerifiers(t, snap2)
	if res := verifyMsg(v2, snap2, bearerMsg(es.sign(t, testClaims("whoever", map[string]any{"tenant": "globex"})))); res.id == nil {
		t.Fatalf("static without issuer: %s", res.cause)
	}
	// A file that is not a key set is a configuration error.
	bad := is
	bad.JWKS = "file:" + writeFile(t, t.TempDir(), "bad.json", []byte(`{"keys":[]}`))
	if _, err := newOAuthVerifiers(context.Background(), oauthSnap(bad)); err == nil {
		t.Fatal("an empty key set accepted")
	}
}

// I2: key rotation: a token whose kid the cached set does not hold makes
// the JWKS fetched again; unknown kids are not fetched more than once per
// refetchEvery.
func TestOAuthKeyRotation(t *testing.T) {
	ti := newTestIssuer(t)
	k1 := newSigningKey(t, "k1", jose.RS256)
	ti.publish(k1)
	snap := oauthSnap(ti.config())
	v := newVerifiers(t, snap)
	if res := verifyMsg(v, snap, bearerMsg(k1.sign(t, testClaims(ti.iss(), nil)))); res.id == nil {
		t.Fatal(res.cause)
	}
	// Unknown kids right after a fetch: refused without a fetch (rate).
	hits := ti.jwksHits.Load()
	rogue := newSigningKey(t, "rogue", jose.ES256)
	for i := 0; i < 5; i++ {
		tok := rogue.sign(t, testClaims(ti.iss(), nil))
		refused(t, "rogue", verifyMsg(v, snap, bearerMsg(tok)), "key unknown", tok)
	}
	if got := ti.jwksHits.Load() - hits; got != 0 {
		t.Fatalf("unknown kids within refetchEvery fetched the JWKS %d times", got)
	}
	// The issuer rotates: a new kid appears; past refetchEvery it is fetched.
	v.refetchEvery = 0
	k2 := newSigningKey(t, "k2", jose.ES256)
	ti.publish(k2)
	res := verifyMsg(v, snap, bearerMsg(k2.sign(t, testClaims(ti.iss(), nil))))
	if res.id == nil {
		t.Fatalf("rotated key: %s", res.cause)
	}
	if got := ti.jwksHits.Load() - hits; got != 1 {
		t.Fatalf("rotation fetched the JWKS %d times, want 1", got)
	}
	// Concurrent unknown kids: one fetch at a time, never one per token.
	v.refetchEvery = time.Hour
	v.issuers[ti.config()].triedAt = time.Time{}
	hits = ti.jwksHits.Load()
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			verifyMsg(v, snap, bearerMsg(unsignedToken(t, "RS256", fmt.Sprint("made-up-", i), testClaims(ti.iss(), nil), "c2ln")))
		}()
	}
	wg.Wait()
	if got := ti.jwksHits.Load() - hits; got != 1 {
		t.Fatalf("20 unknown kids fetched the JWKS %d times, want 1", got)
	}
	// Keys older than keysTTL are fetched again: a withdrawn key stops verifying.
	ti.withdraw("k1")
	v.keysTTL, v.refetchEvery = 0, 0
	tok := k1.sign(t, testClaims(ti.iss(), nil))
	refused(t, "withdrawn", verifyMsg(v, snap, bearerMsg(tok)), "key unknown", tok)
}

// A discovery that fails at start is no error; it is fetched when a token
// needs it, at most once per refetchEvery.
func TestOAuthDiscoveryRetried(t *testing.T) {
	ti := newTestIssuer(t)
	k := newSigningKey(t, "k1", jose.ES256)
	ti.publish(k)
	ti.down.Store(true)
	snap := oauthSnap(ti.config())
	v := newVerifiers(t, snap)
	tok := k.sign(t, testClaims(ti.iss(), nil))
	refused(t, "issuer down", verifyMsg(v, snap, bearerMsg(tok)), `keys of issuer "test" unavailable`, tok)
	ti.down.Store(false)
	hits := ti.docHits.Load()
	refused(t, "within refetchEvery", verifyMsg(v, snap, bearerMsg(tok)), "unavailable", tok)
	if ti.docHits.Load() != hits {
		t.Fatal("fetched again within refetchEvery")
	}
	v.refetchEvery = 0
	if res := verifyMsg(v, snap, bearerMsg(tok)); res.id == nil {
		t.Fatalf("issuer back: %s", res.cause)
	}
	// Configuration errors are errors.
	bad := ti.config()
	bad.CAFile = filepath.Join(t.TempDir(), "missing.crt")
	if _, err := newOAuthVerifiers(context.Background(), oauthSnap(bad)); err == nil {
		t.Fatal("a missing ca_file accepted")
	}
	// Without the issuer's CA, the discovery over HTTPS fails (no error at start).
	noCA := ti.config()
	noCA.CAFile = ""
	snap3 := oauthSnap(noCA)
	v3 := newVerifiers(t, snap3)
	refused(t, "unknown CA", verifyMsg(v3, snap3, bearerMsg(tok)), "unavailable", tok)
}

// S2: at a reload, a token is verified again by the issuers in force: an
// issuer removed, an audience changed, a key withdrawn refuse it.
func TestOAuthReverifyOnReload(t *testing.T) {
	ti := newTestIssuer(t)
	k1, k2 := newSigningKey(t, "k1", jose.RS256), newSigningKey(t, "k2", jose.ES256)
	ti.publish(k1, k2)
	snap := oauthSnap(ti.config())
	v := newVerifiers(t, snap)
	tok := k1.sign(t, testClaims(ti.iss(), nil))
	res := verifyMsg(v, snap, bearerMsg(tok))
	if res.id == nil {
		t.Fatal(res.cause)
	}
	ctx := context.Background()
	// The same issuers: still accepted.
	same := oauthSnap(ti.config())
	if r := v.verifyToken(ctx, same, res.id.token, time.Now()); r.id == nil || r.id.principal != "billing" {
		t.Fatalf("reload, same issuers: %+v", r)
	}
	// A key withdrawn by the issuer: the reload fetches the keys again.
	ti.withdraw("k1")
	hits := ti.jwksHits.Load()
	refused(t, "key withdrawn", v.verifyToken(ctx, oauthSnap(ti.config()), tok, time.Now()), "key unknown", tok)
	if ti.jwksHits.Load() == hits {
		t.Fatal("the reload did not fetch the keys again")
	}
	ti.publish(k1) // back, seen at the next reload
	// The audience changed.
	moved := ti.config()
	moved.Audience = "kafka-v2"
	refused(t, "audience changed", v.verifyToken(ctx, oauthSnap(moved), tok, time.Now()), "audience", tok)
	// The issuer removed.
	refused(t, "issuer removed", v.verifyToken(ctx, oauthSnap(), tok, time.Now()), "no auth.issuers", tok)
	static := configs.Issuer{Name: "static", JWKS: "file:" + writeFile(t, t.TempDir(), "jwks.json", []byte(`{"keys":[`+mustJSON(t, k2.public())+`]}`)), Audience: "kafka", TenantClaim: "org", Issuer: "https://static.example"}
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
