package configs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The base fixture: a valid configuration close to the seed 001 example, with
// every kind of identity available. Table rows edit it (edit) or replace a
// file whole.

const baseFlexway = `version: 1
contracts:
  asyncapi: ./asyncapi.yaml
upstreams:
  events:
    protocol: kafka
    brokers: [kafka-0.kafka:9093, kafka-1.kafka:9093, kafka-2.kafka:9093]
    timeout: 5s
auth:
  issuers:
    - name: customers
      discovery: https://login.example.net/.well-known/openid-configuration
      audience: kafka
      tenant_claim: org
  api_keys:
    store: "file:./api-keys.yaml"
listeners:
  kafka:
    plaintext:
      mesh_only: true
      advertised_host: flexway-kafka.flexway.svc.cluster.local
      clusters:
        shop: { ports: { from: 19092, to: 19095 }, first_node_id: 0 }
`

const baseContract = `asyncapi: 3.0.0
info: { title: Shop events, version: "1.0.0" }
channels:
  orders:
    address: "{tenant}.orders"
    parameters:
      tenant: { x-flexway-bind: tenant }
    messages:
      order: { payload: { type: object, required: [id], properties: { id: { type: string } } } }
operations:
  produceOrders:
    action: send
    channel: { $ref: "#/channels/orders" }
    x-flexway-upstream: events
    x-flexway-kafka-proxy: { cluster: shop, transactions: true }
    security:
      - $ref: "#/components/securitySchemes/apiKey"
      - $ref: "#/components/securitySchemes/ordersWrite"
  consumeOrders:
    action: receive
    channel: { $ref: "#/channels/orders" }
    x-flexway-upstream: events
    x-flexway-kafka-proxy: { cluster: shop, admin_scope: "orders:admin" }
    security:
      - $ref: "#/components/securitySchemes/apiKey"
      - $ref: "#/components/securitySchemes/ordersRead"
components:
  securitySchemes:
    apiKey: { type: plain }
    ordersWrite:
      type: oauth2
      flows: { clientCredentials: { tokenUrl: "https://login.example.net/token", availableScopes: { "orders:write": Produce orders } } }
      scopes: ["orders:write"]
    ordersRead:
      type: oauth2
      flows: { clientCredentials: { tokenUrl: "https://login.example.net/token", availableScopes: { "orders:read": Read orders } } }
      scopes: ["orders:read"]
`

// testKeyHash is HashKey("test-key") in the store's form.
const testKeyHash = "sha256:62af8704764faf8ea82fc61ce9c4c3908b6cb97d463a634e9e587d7c885db0ef"

const baseKeys = `keys:
  - id: acme-orders-producer
    hash: "` + testKeyHash + `"
    tenant: acme
    operations: [produceOrders]
    expires_at: 2027-06-30T00:00:00Z
  - id: acme-orders-reader
    hash: "` + testKeyHash + `"
    tenant: acme
    operations: [consumeOrders]
`

// upstreamAuth is the seed 001 upstream's TLS and SASL towards the brokers,
// which this version refuses (notServed): withUpstreamAuth puts it back.
const upstreamAuth = `    tls: { server_name: kafka.internal }
    sasl: { mechanism: SCRAM-SHA-512, username: flexway, password: "file:./kafka-password" }
`

// tlsListener replaces the base's listener with the TLS one (seed 001
// "L'écouteur TLS"); the certificate files are written by writeFixture.
const tlsListener = `listeners:
  kafka:
    address: ":9093"
    tls:
      cert_file: tls.crt
      key_file: tls.key
      client_ca_file: ca.crt
    sni_domain: kafka.example.com
`

// fixture is one configuration: its three files, and any other file.
type fixture struct {
	flexway, asyncapi, keys string
	extra                   map[string]string
	// servingUnbuilt loads the keys this version refuses (notServed), to
	// test the checks kept for the version that serves them.
	servingUnbuilt bool
}

func base() fixture {
	return fixture{flexway: baseFlexway, asyncapi: baseContract, keys: baseKeys}
}

// withTLS swaps the base's plaintext listener for the TLS one.
func (f fixture) withTLS() fixture {
	i := strings.Index(f.flexway, "listeners:\n")
	f.flexway = f.flexway[:i] + tlsListener
	return f
}

// withUpstreamAuth gives the base's upstream the seed's tls and sasl
// (lines 8 and 9 of flexway.yaml).
func (f fixture) withUpstreamAuth() fixture {
	f.flexway = strings.Replace(f.flexway, "    timeout: 5s\n", upstreamAuth+"    timeout: 5s\n", 1)
	return f
}

// unbuilt makes the fixture load as if every key of notServed were served.
func (f fixture) unbuilt() fixture {
	f.servingUnbuilt = true
	return f
}

// edit is one replacement in one of the fixture's files: "flexway",
// "asyncapi" or "keys". The old text must be there: a fixture that drifted
// must fail the test, not pass it for the wrong reason.
type edit struct{ file, old, new string }

func (f fixture) apply(t *testing.T, edits ...edit) fixture {
	t.Helper()
	for _, e := range edits {
		var s *string
		switch e.file {
		case "flexway":
			s = &f.flexway
		case "asyncapi":
			s = &f.asyncapi
		case "keys":
			s = &f.keys
		default:
			t.Fatalf("edit of unknown file %q", e.file)
		}
		if !strings.Contains(*s, e.old) {
			t.Fatalf("edit: %s does not contain %q", e.file, e.old)
		}
		*s = strings.Replace(*s, e.old, e.new, 1)
	}
	return f
}

// write puts the fixture in a new folder, with a password file and TLS
// material, and returns flexway.yaml's path.
func (f fixture) write(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"flexway.yaml":   f.flexway,
		"asyncapi.yaml":  f.asyncapi,
		"api-keys.yaml":  f.keys,
		"kafka-password": "hunter2-secret\n",
	}
	pems := testPEMs(t)
	files["tls.crt"], files["tls.key"], files["ca.crt"] = pems.cert, pems.key, pems.cert
	for name, content := range f.extra {
		files[name] = content
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "flexway.yaml")
}

// load writes and loads the fixture; errors are returned with the folder
// cut off their file names ("flexway.yaml:12: ...").
func (f fixture) load(t *testing.T) (*Snapshot, string) {
	t.Helper()
	p := f.write(t)
	s, err := load(p, f.servingUnbuilt)
	if err == nil {
		return s, ""
	}
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("Load returned %T, want *LoadError: %v", err, err)
	}
	return s, strings.ReplaceAll(err.Error(), filepath.Dir(p)+string(filepath.Separator), "")
}

type pemPair struct{ cert, key string }

var (
	pemOnce sync.Once
	pemVal  pemPair
	pemErr  error
)

// testPEMs is a self-signed CA certificate for *.shop.kafka.example.com and
// its key, made once per test run.
func testPEMs(t *testing.T) pemPair {
	t.Helper()
	pemOnce.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			pemErr = err
			return
		}
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(1),
			Subject:               pkix.Name{CommonName: "flexway test"},
			DNSNames:              []string{"*.shop.kafka.example.com"},
			NotBefore:             time.Now().Add(-time.Hour),
			NotAfter:              time.Now().Add(24 * time.Hour),
			IsCA:                  true,
			BasicConstraintsValid: true,
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			pemErr = err
			return
		}
		kder, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			pemErr = err
			return
		}
		pemVal = pemPair{
			cert: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
			key:  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})),
		}
	})
	if pemErr != nil {
		t.Fatal(pemErr)
	}
	return pemVal
}
