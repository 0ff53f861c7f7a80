package testkit

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// The issuer, as a verifier reaches it: discovery over HTTPS trusting
// CAFile only, then the JWKS it names; a token it mints verifies with it.
func TestIssuerDiscoveryJWKSAndToken(t *testing.T) {
	is := NewIssuer(t)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: PoolFromFile(t, is.CAFile)}}}
	if _, err := http.Get(is.Discovery()); err == nil {
		t.Fatal("the issuer's certificate is trusted without its CA")
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	getJSON(t, hc, is.Discovery(), &doc)
	if doc.Issuer != is.URL || !strings.HasPrefix(doc.JWKSURI, is.URL) {
		t.Fatalf("discovery: %+v (issuer %s)", doc, is.URL)
	}
	var set jose.JSONWebKeySet
	getJSON(t, hc, doc.JWKSURI, &set)
	tok := is.Token(t, map[string]any{"sub": "orders-app", "scope": "orders:read"})
	jws, err := jose.ParseSigned(tok, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	keys := set.Key(jws.Signatures[0].Header.KeyID)
	if len(keys) != 1 {
		t.Fatalf("the JWKS holds no key %q", jws.Signatures[0].Header.KeyID)
	}
	payload, err := jws.Verify(keys[0])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	if claims["iss"] != is.URL || claims["sub"] != "orders-app" || claims["exp"] == nil {
		t.Fatalf("claims %v", claims)
	}
}

func getJSON(t *testing.T, hc *http.Client, url string, v any) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

// A server certificate for a wildcard name, reached through the loopback
// dialer under a name no DNS knows; a client certificate the server's CA
// verifies, with its subject.
func TestCALoopbackDialerSNI(t *testing.T) {
	ca := NewCA(t, "test CA")
	sc, sk := ca.Issue(t, Leaf{CommonName: "gateway", Names: []string{"*.shop.kafka.example.test"}})
	srvCert := KeyPair(t, sc, sk)
	cc, ck := ca.Issue(t, Leaf{CommonName: "billing-app", Client: true})
	cliCert := KeyPair(t, cc, ck)
	port := FreePort(t)
	ln, err := tls.Listen("tcp", net.JoinHostPort("127.0.0.1", itoa(port)), &tls.Config{
		Certificates: []tls.Certificate{srvCert}, ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type seen struct {
		sni, subject string
	}
	got := make(chan seen, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		tc := c.(*tls.Conn)
		if err := tc.Handshake(); err != nil {
			got <- seen{}
			return
		}
		st := tc.ConnectionState()
		got <- seen{st.ServerName, st.PeerCertificates[0].Subject.String()}
	}()
	dial := LoopbackDialer(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cliCert}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := dial(ctx, "tcp", net.JoinHostPort("broker-1.shop.kafka.example.test", itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if s := <-got; s.sni != "broker-1.shop.kafka.example.test" || s.subject != "CN=billing-app" {
		t.Fatalf("the server saw SNI %q, client %q", s.sni, s.subject)
	}
	if _, err := c.(*tls.Conn).ConnectionState().PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots: ca.Pool(), DNSName: "bootstrap.shop.kafka.example.test"}); err != nil {
		t.Fatalf("the wildcard does not cover the bootstrap name: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
