package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
//
// This file reads the SASL message and the token's header and chooses its
// issuer; oauth_keys.go keeps the issuers' key sets (fetch, cache, refresh);
// oauth_claims.go checks the signature and the claims.

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

// Verify checks a SASL OAUTHBEARER client message (RFC 7628) against the
// issuers of snap, the snapshot in force. It may fetch keys: never on a loop.
func (v *OAuth) Verify(ctx context.Context, snap *configs.Snapshot, msg []byte, now time.Time) Result {
	res := v.verify(ctx, snap, msg, now)
	res.User = BoundName(res.User)
	return res
}

func (v *OAuth) verify(ctx context.Context, snap *configs.Snapshot, msg []byte, now time.Time) Result {
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
