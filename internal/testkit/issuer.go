package testkit

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Issuer is an OpenID provider on loopback over HTTPS, as auth.issuers
// names one: its discovery document (/.well-known/openid-configuration,
// whose issuer is URL) and its key set (/jwks), one RS256 key. Its
// certificate is signed by a CA of its own, written to CAFile for the
// issuer's ca_file. Closed at the end of the test.
type Issuer struct {
	URL    string // the issuer's name (iss) and base URL, https://127.0.0.1:port
	CAFile string // the CA of the server's certificate, PEM
	kid    string
	key    *rsa.PrivateKey
	srv    *httptest.Server
}

// NewIssuer starts an issuer.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &Issuer{kid: "testkit-1", key: key}
	ca := NewCA(t, "testkit issuer CA")
	is.CAFile = WriteFile(t, t.TempDir(), "issuer-ca.crt", ca.PEM)
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": is.URL, "jwks_uri": is.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		pub := jose.JSONWebKey{Key: &is.key.PublicKey, KeyID: is.kid, Algorithm: string(jose.RS256), Use: "sig"}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{pub}})
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

// Token signs claims as a JWT of the issuer. iss is the issuer's unless
// claims set it; iat is now and exp an hour from now unless set.
func (is *Issuer) Token(t testing.TB, claims map[string]any) string {
	t.Helper()
	c := map[string]any{"iss": is.URL, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range claims {
		c[k] = v
	}
	payload, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: is.key, KeyID: is.kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
