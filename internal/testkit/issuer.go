package testkit

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Issuer is an OpenID provider on loopback over HTTPS, as auth.issuers
// names one: its discovery document (/.well-known/openid-configuration,
// whose issuer is URL) and its key set (/jwks). Its certificate is signed
// by a CA of its own, written to CAFile for the issuer's ca_file. It
// publishes Key and the keys Publish adds, until Withdraw removes them;
// while Down is set it answers 503. Closed at the end of the test.
type Issuer struct {
	URL    string      // the issuer's name (iss) and base URL, https://127.0.0.1:port
	CAFile string      // the CA of the server's certificate, PEM
	Key    *SigningKey // published from the start (RS256, kid "testkit-1"): Token signs with it

	Down     atomic.Bool  // answer 503 to both documents
	DocHits  atomic.Int32 // requests for the discovery document
	JWKSHits atomic.Int32 // requests for the key set

	mu   sync.Mutex
	keys []*SigningKey // published
	srv  *httptest.Server
}

// NewIssuer starts an issuer.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	is := &Issuer{Key: NewSigningKey(t, "testkit-1", jose.RS256)}
	is.keys = []*SigningKey{is.Key}
	ca := NewCA(t, "testkit issuer CA")
	is.CAFile = WriteFile(t, t.TempDir(), "issuer-ca.crt", ca.PEM)
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		is.DocHits.Add(1)
		if is.Down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": is.URL, "jwks_uri": is.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		is.JWKSHits.Add(1)
		if is.Down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(is.jwks())
	})
	is.srv = httptest.NewUnstartedServer(mux)
	certPEM, keyPEM := ca.Issue(t, Leaf{CommonName: "issuer", Names: []string{"127.0.0.1", "localhost"}})
	is.srv.TLS = &tls.Config{Certificates: []tls.Certificate{KeyPair(t, certPEM, keyPEM)}}
	is.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // a client that does not trust the CA: the test's business
	is.srv.StartTLS()
	t.Cleanup(is.srv.Close)
	is.URL = is.srv.URL
	return is
}

// Discovery is the URL of the OpenID configuration: auth.issuers[].discovery.
func (is *Issuer) Discovery() string { return is.URL + "/.well-known/openid-configuration" }

// Publish adds keys to the key set.
func (is *Issuer) Publish(ks ...*SigningKey) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys = append(is.keys, ks...)
}

// Withdraw removes the keys whose id is kid from the key set.
func (is *Issuer) Withdraw(kid string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	var keep []*SigningKey
	for _, k := range is.keys {
		if k.Kid != kid {
			keep = append(keep, k)
		}
	}
	is.keys = keep
}

// jwks is the published key set.
func (is *Issuer) jwks() jose.JSONWebKeySet {
	is.mu.Lock()
	defer is.mu.Unlock()
	var set jose.JSONWebKeySet
	for _, k := range is.keys {
		set.Keys = append(set.Keys, k.Public())
	}
	return set
}

// Token signs claims as a JWT of the issuer with Key. iss is the issuer's
// unless claims set it; iat is now and exp an hour from now unless set.
func (is *Issuer) Token(t testing.TB, claims map[string]any) string {
	t.Helper()
	c := map[string]any{"iss": is.URL, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range claims {
		c[k] = v
	}
	return is.Key.Sign(t, c)
}

// SigningKey is a key that signs tokens: an issuer's once published, a
// stranger's otherwise.
type SigningKey struct {
	Kid  string
	Alg  jose.SignatureAlgorithm // RS256 or ES256
	priv any
}

// NewSigningKey makes a key of alg (RS256 or ES256) named kid.
func NewSigningKey(t testing.TB, kid string, alg jose.SignatureAlgorithm) *SigningKey {
	t.Helper()
	k := &SigningKey{Kid: kid, Alg: alg}
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

// Public is the key as a key set publishes it.
func (k *SigningKey) Public() jose.JSONWebKey {
	jwk := jose.JSONWebKey{Key: k.priv, KeyID: k.Kid, Algorithm: string(k.Alg), Use: "sig"}
	return jwk.Public()
}

// Sign makes a compact JWS of claims with the key (its kid in the header).
func (k *SigningKey) Sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: k.Alg, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.Kid}}, (&jose.SignerOptions{}).WithType("JWT"))
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

// Unsigned crafts a token by hand, header.payload.signature, with any alg
// (e.g. "none") and sig as its signature part (base64url, maybe empty).
func Unsigned(alg, kid string, claims map[string]any, sig string) string {
	h, _ := json.Marshal(map[string]string{"alg": alg, "kid": kid, "typ": "JWT"})
	p, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(p) + "." + sig
}

// Claims are the claims of a valid token of iss as the tests' issuers are
// declared (audience kafka, tenant claim org): subject billing, tenant
// acme, scopes orders:write and orders:read, an hour to live. edits change
// them; a nil value deletes the claim.
func Claims(iss string, edits map[string]any) map[string]any {
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
