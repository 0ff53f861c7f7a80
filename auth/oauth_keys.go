package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/flexway/flexway/configs"
	jose "github.com/go-jose/go-jose/v4"
)

// The issuers' key sets (see oauth.go): discovery document and JWKS fetched,
// or the JWKS file read, off the loop; cached per issuer and fetched again
// when due, rate-limited, one refresh at a time.

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

// newIssuerKeys prepares an issuer's state, nothing fetched yet: a JWKS
// file's name checked, or, for discovery, its URL checked and an HTTP client
// made that trusts the system roots and ca_file.
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

// hasKid reports whether keys hold the key id kid.
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

// get fetches one document (discovery or JWKS), at most oauthMaxDocument bytes.
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
