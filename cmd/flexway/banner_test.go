package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/internal/testkit"
)

// writeCerts writes ca.crt and a server certificate tls.crt/tls.key for
// *.shop.<domain> that it signed into dir.
func writeCerts(t *testing.T, dir, domain string) {
	t.Helper()
	ca := testkit.NewCA(t, "banner test CA")
	cert, key := ca.Issue(t, testkit.Leaf{CommonName: "gateway", Names: []string{"*.shop." + domain}})
	testkit.WriteFile(t, dir, "ca.crt", ca.PEM)
	testkit.WriteFile(t, dir, "tls.crt", cert)
	testkit.WriteFile(t, dir, "tls.key", key)
}

const bannerContract = `asyncapi: 3.0.0
info: { title: t, version: "1" }
channels:
  orders:
    address: "{tenant}.orders"
    parameters: { tenant: { x-flexway-bind: tenant } }
operations:
  produceOrders:
    action: send
    channel: { $ref: "#/channels/orders" }
    x-flexway-upstream: events
    x-flexway-kafka-proxy: { cluster: shop }
    security: [ { $ref: "#/components/securitySchemes/apiKey" } ]
  produceByCert:
    action: send
    channel: { $ref: "#/channels/orders" }
    x-flexway-upstream: events
    x-flexway-kafka-proxy: { cluster: shop }
    security: [ { $ref: "#/components/securitySchemes/cert" } ]
  consumeOrders:
    action: receive
    channel: { $ref: "#/channels/orders" }
    x-flexway-upstream: events
    x-flexway-kafka-proxy: { cluster: shop }
    security: [ { $ref: "#/components/securitySchemes/apiKey" } ]
components:
  securitySchemes:
    apiKey: { type: plain }
    cert: { type: X509 }
`

// Keys in name order: the first is expired, the second is bound to an
// operation that only certificates open; neither may be suggested.
const bannerKeyStore = `keys:
  - { id: a-expired, hash: "sha256:0000000000000000000000000000000000000000000000000000000000000000", tenant: acme, operations: [produceOrders, consumeOrders], expires_at: 2020-01-01T00:00:00Z }
  - { id: b-cert-only, hash: "sha256:0000000000000000000000000000000000000000000000000000000000000001", tenant: acme, operations: [produceByCert] }
  - { id: d-reader, hash: "sha256:0000000000000000000000000000000000000000000000000000000000000003", tenant: acme, operations: [consumeOrders] }
  - { id: c-producer, hash: "sha256:0000000000000000000000000000000000000000000000000000000000000002", tenant: acme, operations: [produceOrders] }
`

// Issue 13.3 and 13.4: the banner for either listener and both; the TLS
// one names the SNI bootstrap, SASL_SSL and the CA to trust; it suggests
// neither an expired key nor one that cannot do the command.
func TestBannerListeners(t *testing.T) {
	tlsBlock := `    address: "127.0.0.1:0"
    tls: { cert_file: ./tls.crt, key_file: ./tls.key, client_ca_file: ./ca.crt }
    sni_domain: kafka.example.test
    advertised_port: 9093
`
	plainBlock := `    plaintext:
      mesh_only: true
      advertised_host: 127.0.0.1
      clusters: { shop: { ports: { from: 19092, to: 19095 } } }
`
	for _, c := range []struct {
		name, listener string
		tls, plain     bool
	}{
		{"tls only", tlsBlock, true, false},
		{"plaintext only", plainBlock, false, true},
		{"both", tlsBlock + plainBlock, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeCerts(t, dir, "kafka.example.test")
			contract, store := bannerContract, bannerKeyStore
			if !c.tls { // certificates need the TLS listener: no X509 operation
				contract = strings.Replace(contract, "security: [ { $ref: \"#/components/securitySchemes/cert\" } ]", "security: [ { $ref: \"#/components/securitySchemes/apiKey\" } ]", 1)
				contract = strings.Replace(contract, "    cert: { type: X509 }\n", "", 1)
				store = strings.Replace(store, "operations: [produceByCert] }", "operations: [consumeOrders], expires_at: 2021-01-01T00:00:00Z }", 1)
			}
			os.WriteFile(filepath.Join(dir, "asyncapi.yaml"), []byte(contract), 0o600)
			os.WriteFile(filepath.Join(dir, "api-keys.yaml"), []byte(store), 0o600)
			os.WriteFile(filepath.Join(dir, "c-producer.key"), []byte("demo"), 0o600)
			cfg := "version: 1\ncontracts: { asyncapi: ./asyncapi.yaml }\nupstreams: { events: { protocol: kafka, embedded: { brokers: 1 } } }\n" +
				"auth:\n  api_keys: { store: \"file:./api-keys.yaml\" }\n  mtls: { clients: [ { id: billing, subject: \"CN=billing-app\", tenant: acme, operations: [produceByCert] } ] }\n" +
				"listeners:\n  kafka:\n" + c.listener
			if !c.tls {
				cfg = strings.Replace(cfg, "  mtls: { clients: [ { id: billing, subject: \"CN=billing-app\", tenant: acme, operations: [produceByCert] } ] }\n", "", 1)
			}
			path := filepath.Join(dir, "flexway.yaml")
			os.WriteFile(path, []byte(cfg), 0o600)
			snap, err := configs.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			banner(&out, snap, 4, nil, nil, time.Now())
			s := out.String()
			for _, bad := range []string{"a-expired", "b-cert-only"} {
				if strings.Contains(s, bad) {
					t.Errorf("the banner suggests %s:\n%s", bad, s)
				}
			}
			if got := strings.Count(s, "produce: echo hello | kcat -P"); got != strings.Count(s, "sasl.username=c-producer") || got == 0 {
				t.Errorf("the produce command should use c-producer:\n%s", s)
			}
			if got := strings.Count(s, "consume: kcat -C"); got != strings.Count(s, "sasl.username=d-reader") || got == 0 {
				t.Errorf("the consume command should use d-reader:\n%s", s)
			}
			wantTLS := "kcat -P -b bootstrap.shop.kafka.example.test:9093 -X security.protocol=SASL_SSL -X ssl.ca.location=" + filepath.Join(dir, "ca.crt")
			if strings.Contains(s, wantTLS) != c.tls {
				t.Errorf("TLS command %q present=%v, want %v:\n%s", wantTLS, !c.tls, c.tls, s)
			}
			wantPlain := "kcat -P -b 127.0.0.1:19092 -X security.protocol=SASL_PLAINTEXT"
			if strings.Contains(s, wantPlain) != c.plain {
				t.Errorf("plaintext command present=%v, want %v:\n%s", !c.plain, c.plain, s)
			}
			if !strings.Contains(s, "$(cat "+filepath.Join(dir, "c-producer.key")+")") {
				t.Errorf("the demo key file beside the store is not used:\n%s", s)
			}
		})
	}
}
