package auth

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flexway/flexway/configs"
	jose "github.com/go-jose/go-jose/v4"
)

// OAUTHBEARER (SPEC I2, I6, S2, S3; seed 001 "Les identités").
//
// A token is a compact JWS signed by one of auth.issuers. The key sets are
// fetched (discovery: the OpenID configuration, then its jwks_uri) or read
// (jwks: "file:/path") off the loop: at start in NewOAuth, then in
// the worker pool when a verification needs them. They are kept per issuer
// and fetched again when
//   - a token names a key id the set does not hold (rotation), at most once
//     per refetchEvery, so that tokens with made-up key ids cannot turn the
//     gateway into a flood of requests to the issuer;
//   - they are older than keysTTL (a key withdrawn by the issuer stops
//     verifying within that delay);
//   - a newer configuration snapshot is in force (a reload): the tokens of
//     open sessions are verified again by the issuers in force (S2).
// A fetch that fails keeps the keys already held.
//
// The signature is checked with go-jose; the claims by hand, so that every
// refusal has its own cause. A cause never carries the token, nor any value
// read from it before its signature is verified.

// oauthAlgs are the signature algorithms accepted: asymmetric only (an HMAC
// key would be a secret shared with every verifier), never "none".
var oauthAlgs = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512,
	jose.EdDSA,
}

const (
	oauthMaxToken    = 64 << 10        // a longer token is refused as malformed
	oauthMaxDocument = 1 << 20         // discovery document and JWKS read at most
	oauthLeeway      = 1 * time.Minute // clock skew allowed on nbf (never on exp)
)

// OAuth verifies OAUTHBEARER tokens against auth.issuers (I2), keeping
// each issuer's key set. It is safe for concurrent use by the worker pool.
type OAuth struct {
	// refetchEvery is the least delay between two fetches of one issuer's
	// keys caused by an unknown key id or by a failed fetch (default 5s).
	refetchEvery time.Duration
	// keysTTL: keys older than this are fetched again before use (default 10m).
	keysTTL time.Duration
	// fetchTimeout bounds one fetch (discovery document and JWKS), below
	// the caller's context (default 10s).
	fetchTimeout time.Duration

	mu      sync.Mutex
	issuers map[configs.Issuer]*issuerKeys // by the issuer's whole configuration
	latest  *configs.Snapshot              // the newest snapshot seen
}

// issuerKeys is what is known of one issuer: its expected iss and its keys.
type issuerKeys struct {
	cfg    configs.Issuer
	client *http.Client  // discovery only
	sem    chan struct{} // one refresh at a time

	mu        sync.RWMutex
	iss       string            // the expected iss: configured, or the discovery document's
	keys      []jose.JSONWebKey // public signature keys
	loaded    bool              // keys were fetched or read once
	fetchedAt time.Time         // last success
	triedAt   time.Time         // last attempt
	forSnap   *configs.Snapshot // the snapshot the last attempt was made for
	lastErr   error             // last failure (not logged: causes name the issuer only)
}

// NewOAuth prepares the issuers of snap: discovery documents and
// key sets are fetched (bounded by ctx) and cached. A fetch that fails is
// no error: it is tried again when a token needs the issuer. Only a
// configuration error (an unreadable CA file, a JWKS file that is not a
// key set, a discovery URL that is not one) is returned.
func NewOAuth(ctx context.Context, snap *configs.Snapshot) (*OAuth, error) {
	v := &OAuth{
		refetchEvery: 5 * time.Second,
		keysTTL:      10 * time.Minute,
		fetchTimeout: 10 * time.Second,
		issuers:      map[configs.Issuer]*issuerKeys{},
		latest:       snap,
	}
	if snap == nil || snap.File == nil {
		return v, nil
	}
	var errs []error
	for _, is := range snap.File.Auth.Issuers {
		st, err := newIssuerKeys(is)
		if err != nil {
			errs = append(errs, fmt.Errorf("auth.issuers %q: %w", is.Name, err))
			continue
		}
		if is.JWKS != "" {
			// A static key set: read now, an error is the configuration's.
			if err := st.refresh(ctx, v, snap, refreshForce, ""); err != nil {
				errs = append(errs, fmt.Errorf("auth.issuers %q: %w", is.Name, err))
				continue
			}
		}
		v.issuers[is] = st
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// Discovery: fetched concurrently, each bounded; a failure is retried later.
	var wg sync.WaitGroup
	for _, st := range v.issuers {
		if st.cfg.Discovery == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = st.refresh(ctx, v, snap, refreshForce, "")
		}()
	}
	wg.Wait()
	return v, nil
}

func newIssuerKeys(is configs.Issuer) (*issuerKeys, error) {
	st := &issuerKeys{cfg: is, iss: is.Issuer, sem: make(chan struct{}, 1)}
	if is.Discovery == "" {
		if _, ok := strings.CutPrefix(is.JWKS, "file:"); !ok {
			return nil, fmt.Errorf("jwks %q: \"file:/path\" expected", is.JWKS)
		}
		return st, nil
	}
	if err := configs.CheckFetchURL(is.Discovery); err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if is.CAFile != "" {
		pem, err := os.ReadFile(is.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ca_file: %w", err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file %s holds no PEM certificate", is.CAFile)
		}
	}
	st.client = &http.Client{
		Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout: 10 * time.Second,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     90 * time.Second,
		},
		// A redirect must stay on https (or http to loopback) too.
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			return configs.CheckFetchURL(req.URL.String())
		},
	}
	return st, nil
}

// Verify checks a SASL OAUTHBEARER client message (RFC 7628) against the
// issuers of snap, the snapshot in force. It may fetch keys: never on a loop.
func (v *OAuth) Verify(ctx context.Context, snap *configs.Snapshot, msg []byte, now time.Time) Result {
	authzid, token, ok := parseOAuthBearer(msg)
	if !ok {
		return Result{Cause: "malformed OAUTHBEARER message"}
	}
	res := v.verifyToken(ctx, snap, token, now)
	if res.ID != nil && authzid != "" && authzid != res.ID.Principal {
		return Result{Cause: "OAUTHBEARER authorization id differs from the token's subject", User: res.User}
	}
	return res
}

// parseOAuthBearer reads an RFC 7628 client initial response:
//
//	gs2-header %x01 *(key "=" value %x01) %x01, with auth=Bearer <token>
//
// gs2-header is "n," or "y," then an optional "a=<authzid>" then ",".
// Channel binding ("p=") is not supported.
func parseOAuthBearer(msg []byte) (authzid, token string, ok bool) {
	if len(msg) < 3 || (msg[0] != 'n' && msg[0] != 'y') || msg[1] != ',' {
		return "", "", false
	}
	rest := msg[2:]
	i := bytes.IndexByte(rest, ',')
	if i < 0 {
		return "", "", false
	}
	if a := rest[:i]; len(a) > 0 {
		name, found := bytes.CutPrefix(a, []byte("a="))
		if !found {
			return "", "", false
		}
		z, good := unescapeSASLName(string(name))
		if !good || z == "" {
			return "", "", false
		}
		authzid = z
	}
	rest = rest[i+1:]
	if len(rest) < 3 || rest[0] != 1 || !bytes.HasSuffix(rest, []byte{1, 1}) {
		return "", "", false
	}
	found := false
	for _, kv := range bytes.Split(rest[1:len(rest)-2], []byte{1}) {
		k, val, eq := bytes.Cut(kv, []byte{'='})
		if !eq || len(k) == 0 {
			return "", "", false
		}
		for _, c := range k {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return "", "", false
			}
		}
		if string(k) != "auth" {
			continue // SASL extensions: not used
		}
		if found {
			return "", "", false
		}
		found = true
		scheme, cred, sp := bytes.Cut(val, []byte{' '})
		if !sp || !strings.EqualFold(string(scheme), "bearer") {
			return "", "", false
		}
		token = string(bytes.TrimSpace(cred))
	}
	if !found || token == "" || len(token) > oauthMaxToken {
		return "", "", false
	}
	return authzid, token, true
}

// unescapeSASLName undoes RFC 5801's saslname escapes (=2C for ',', =3D for '=').
func unescapeSASLName(s string) (string, bool) {
	if !strings.Contains(s, "=") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// joseHeader is the part of a JWS protected header read before verifying.
type joseHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
}

// verifyToken verifies a JWT against the issuers of snap, the snapshot in
// force: at authentication (from Verify) and again, for every open
// token session, at each reload (S2, from Recheck). The identity it returns carries the
// token (Identity.token) for that.
func (v *OAuth) verifyToken(ctx context.Context, snap *configs.Snapshot, jwt string, now time.Time) Result {
	if v == nil || snap == nil || snap.File == nil || len(snap.File.Auth.Issuers) == 0 {
		return Result{Cause: "no auth.issuers to verify tokens"}
	}
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || len(jwt) > oauthMaxToken {
		return Result{Cause: "malformed token: a compact JWS (header.payload.signature) expected"}
	}
	var hdr joseHeader
	if b, err := base64.RawURLEncoding.DecodeString(parts[0]); err != nil || json.Unmarshal(b, &hdr) != nil {
		return Result{Cause: "malformed token header"}
	}
	if !slices.Contains(oauthAlgs, jose.SignatureAlgorithm(hdr.Alg)) {
		return Result{Cause: "token algorithm not allowed: " + safeWord(hdr.Alg)}
	}
	if parts[2] == "" {
		return Result{Cause: "token without signature"}
	}
	// The claims, not verified yet: only iss is read, to choose the issuer.
	var pre struct {
		Iss json.RawMessage `json:"iss"`
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(payload, &pre) != nil {
		return Result{Cause: "malformed token claims"}
	}
	var iss string
	hasIss := len(pre.Iss) > 0 && string(pre.Iss) != "null"
	if hasIss && json.Unmarshal(pre.Iss, &iss) != nil {
		return Result{Cause: "malformed token claims: iss is not a string"}
	}
	jws, err := jose.ParseSignedCompact(jwt, oauthAlgs)
	if err != nil || len(jws.Signatures) != 1 {
		return Result{Cause: "malformed token"}
	}

	v.observe(snap)
	var first Result
	tried := false
	for _, is := range snap.File.Auth.Issuers {
		st := v.state(is)
		if st == nil {
			continue
		}
		if !st.admits(ctx, v, snap, iss, hasIss) {
			continue
		}
		tried = true
		res := v.verifyWith(ctx, snap, st, jws, hdr, now)
		if res.ID != nil {
			res.ID.token = jwt
			return res
		}
		if first.Cause == "" {
			first = res
		}
	}
	if !tried {
		return Result{Cause: "unknown issuer: the token's iss names none of auth.issuers"}
	}
	return first
}

// safeWord returns a header value fit for a log line: short, plain, or "?".
func safeWord(s string) string {
	if s == "" {
		return `""`
	}
	if len(s) > 16 {
		return "?"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "?"
		}
	}
	return s
}

// observe records the newest snapshot and forgets issuers it no longer declares.
func (v *OAuth) observe(snap *configs.Snapshot) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.latest == snap || (v.latest != nil && snap.LoadedAt.Before(v.latest.LoadedAt)) {
		return
	}
	v.latest = snap
	keep := map[configs.Issuer]bool{}
	for _, is := range snap.File.Auth.Issuers {
		keep[is] = true
	}
	for k, st := range v.issuers {
		if !keep[k] {
			delete(v.issuers, k)
			if st.client != nil {
				st.client.CloseIdleConnections()
			}
		}
	}
}

// state returns the cached state of an issuer, created on first use (an
// issuer added by a reload). nil if its configuration cannot be used.
func (v *OAuth) state(is configs.Issuer) *issuerKeys {
	v.mu.Lock()
	defer v.mu.Unlock()
	if st := v.issuers[is]; st != nil {
		return st
	}
	st, err := newIssuerKeys(is)
	if err != nil {
		return nil
	}
	v.issuers[is] = st
	return st
}

// admits reports whether a token whose iss is iss may be the issuer's.
func (st *issuerKeys) admits(ctx context.Context, v *OAuth, snap *configs.Snapshot, iss string, hasIss bool) bool {
	if st.cfg.Issuer != "" {
		return hasIss && iss == st.cfg.Issuer
	}
	if st.cfg.Discovery == "" {
		return true // a static key set without an expected iss: its keys decide
	}
	st.mu.RLock()
	loaded, expected := st.loaded, st.iss
	st.mu.RUnlock()
	if !loaded {
		_ = st.refresh(ctx, v, snap, refreshIfDue, "")
		st.mu.RLock()
		loaded, expected = st.loaded, st.iss
		st.mu.RUnlock()
	}
	if !loaded {
		// Unknown until the document is fetched: the URL's base, as OpenID
		// Connect Discovery requires it to be.
		expected = strings.TrimSuffix(st.cfg.Discovery, "/.well-known/openid-configuration")
	}
	return hasIss && iss == expected
}

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
	return Result{User: user, ID: &Identity{
		Principal: user,
		Mechanism: configs.MechOAuth,
		Tenant:    tenant,
		Ops:       ops,
		Expires:   exp,
		Scopes:    slices.Sorted(maps.Keys(scopes)),
	}}
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

// refreshMode says when a refresh fetches.
type refreshMode uint8

const (
	refreshForce   refreshMode = iota // always (start)
	refreshIfDue                      // not loaded, stale, or a newer snapshot; rate-limited
	refreshKeyMiss                    // a key id not held; rate-limited
)

// keysFor returns the issuer's keys, fetched first if due or if kid is not held.
func (st *issuerKeys) keysFor(ctx context.Context, v *OAuth, snap *configs.Snapshot, kid string) ([]jose.JSONWebKey, error) {
	_ = st.refresh(ctx, v, snap, refreshIfDue, "")
	st.mu.RLock()
	keys, loaded := st.keys, st.loaded
	st.mu.RUnlock()
	if loaded && kid != "" && !hasKid(keys, kid) {
		_ = st.refresh(ctx, v, snap, refreshKeyMiss, kid)
		st.mu.RLock()
		keys, loaded = st.keys, st.loaded
		st.mu.RUnlock()
	}
	if !loaded {
		return nil, errors.New("no keys")
	}
	return keys, nil
}

func hasKid(keys []jose.JSONWebKey, kid string) bool {
	for i := range keys {
		if keys[i].KeyID == kid {
			return true
		}
	}
	return false
}

// due reports whether a refresh should fetch now (st.mu held for reading).
func (st *issuerKeys) due(v *OAuth, snap *configs.Snapshot, mode refreshMode, kid string) bool {
	now := time.Now()
	newer := snap != nil && st.forSnap != snap && (st.forSnap == nil || !snap.LoadedAt.Before(st.forSnap.LoadedAt))
	if mode == refreshForce {
		return true
	}
	if newer && mode == refreshIfDue {
		return true // a reload: once per snapshot, whatever the rate
	}
	if !st.triedAt.IsZero() && now.Sub(st.triedAt) < v.refetchEvery {
		return false
	}
	switch mode {
	case refreshIfDue:
		return !st.loaded || now.Sub(st.fetchedAt) >= v.keysTTL
	case refreshKeyMiss:
		return !hasKid(st.keys, kid)
	}
	return false
}

// refresh fetches (discovery) or reads (jwks file) the issuer's keys if
// mode says it is due (kid: the key id missed, for refreshKeyMiss). One
// refresh at a time; the others wait for it (bounded by ctx) and use its
// result. A failure keeps the keys held.
func (st *issuerKeys) refresh(ctx context.Context, v *OAuth, snap *configs.Snapshot, mode refreshMode, kid string) error {
	st.mu.RLock()
	need := st.due(v, snap, mode, kid)
	st.mu.RUnlock()
	if !need {
		return nil
	}
	select {
	case st.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-st.sem }()
	// Another worker may have refreshed while this one waited.
	if mode != refreshForce {
		st.mu.RLock()
		need = st.due(v, snap, mode, kid)
		st.mu.RUnlock()
		if !need {
			return nil
		}
	}

	fctx, cancel := context.WithTimeout(ctx, v.fetchTimeout)
	defer cancel()
	iss, keys, err := st.load(fctx)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.triedAt = time.Now()
	if snap != nil && (st.forSnap == nil || !snap.LoadedAt.Before(st.forSnap.LoadedAt)) {
		st.forSnap = snap
	}
	if err != nil {
		st.lastErr = err
		return err
	}
	st.keys, st.loaded, st.fetchedAt, st.lastErr = keys, true, st.triedAt, nil
	if st.cfg.Issuer == "" && st.cfg.Discovery != "" {
		st.iss = iss
	}
	return nil
}

// load reads the key set: the JWKS file, or the discovery document and its jwks_uri.
func (st *issuerKeys) load(ctx context.Context) (iss string, keys []jose.JSONWebKey, err error) {
	if st.cfg.Discovery == "" {
		name, _ := strings.CutPrefix(st.cfg.JWKS, "file:")
		data, err := os.ReadFile(name)
		if err != nil {
			return "", nil, fmt.Errorf("jwks: %w", err)
		}
		keys, err := parseJWKS(data)
		if err == nil && len(keys) == 0 {
			err = errors.New("no public signature key") // a static file without keys: a mistake
		}
		if err != nil {
			return "", nil, fmt.Errorf("jwks %s: %w", name, err)
		}
		return "", keys, nil
	}
	body, err := st.get(ctx, st.cfg.Discovery)
	if err != nil {
		return "", nil, fmt.Errorf("discovery: %w", err)
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", nil, fmt.Errorf("discovery: %w", err)
	}
	if doc.Issuer == "" || doc.JWKSURI == "" {
		return "", nil, errors.New("discovery: issuer and jwks_uri required")
	}
	if err := configs.CheckFetchURL(doc.JWKSURI); err != nil {
		return "", nil, fmt.Errorf("discovery: jwks_uri: %w", err)
	}
	body, err = st.get(ctx, doc.JWKSURI)
	if err != nil {
		return "", nil, fmt.Errorf("jwks: %w", err)
	}
	keys, err = parseJWKS(body)
	if err != nil {
		return "", nil, fmt.Errorf("jwks: %w", err)
	}
	return doc.Issuer, keys, nil
}

func (st *issuerKeys) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := st.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, oauthMaxDocument+1))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if len(body) > oauthMaxDocument {
		return nil, fmt.Errorf("GET %s: larger than %d bytes", u, oauthMaxDocument)
	}
	return body, nil
}

// parseJWKS keeps the public signature keys of a JSON Web Key Set; keys of
// a type or use not understood are skipped (RFC 7517 5), symmetric ones too.
func parseJWKS(data []byte) ([]jose.JSONWebKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, errors.New("not a JSON Web Key Set")
	}
	var out []jose.JSONWebKey
	for _, raw := range set.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			continue
		}
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		switch k.Key.(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		case *rsa.PrivateKey, *ecdsa.PrivateKey, ed25519.PrivateKey:
			k = k.Public()
		default:
			continue
		}
		out = append(out, k)
	}
	if len(out) == 0 && len(set.Keys) > 0 {
		// Keys, none usable: a misconfiguration. An empty set is an answer:
		// the issuer withdrew every key, and no token verifies any more.
		return nil, errors.New("no public signature key")
	}
	return out, nil
}
