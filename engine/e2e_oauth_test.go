package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// oauthEnv is a gateway whose contract admits tokens (oauth2 alternatives:
// orders:write for produceOrders, orders:read for consumeOrders) from a
// test issuer found by discovery over HTTPS on loopback.
type oauthEnv struct {
	*testEnv
	issuer *testkit.Issuer
	key    *testkit.SigningKey // published by the issuer
}

func newOAuthEnv(t *testing.T) *oauthEnv {
	t.Helper()
	return newOAuthEnvWith(t, nil, 1)
}

// newOAuthEnvWith is newOAuthEnv with the contract passed through edit
// (after the oauth2 alternatives are added; nil keeps it) and the first
// nkeys of testKeys in the store.
func newOAuthEnvWith(t *testing.T, edit func(contract string) string, nkeys int) *oauthEnv {
	t.Helper()
	ti := testkit.NewIssuer(t)
	key := testkit.NewSigningKey(t, "gw-1", jose.RS256)
	ti.Publish(key)

	base := testkit.FreePorts(t, 5)
	env, upstream, firstNode := upstreamEnv(t, "    embedded: { brokers: 3, partitions: 2 }\n", true)
	// The key store names tenant acme (the embedded upstream seeds its topics).
	store := env.keyStore(testKeys[:nkeys], func(i int, id string) string { return fmt.Sprintf("oauth-env-key-%d-%s", i, id) })
	writeFile(t, env.dir, "issuer-ca.crt", mustRead(t, ti.CAFile))
	cfg := shopConfig(upstream, issuerAuth(ti), "    max_connections_per_ip: 0\n", base, base+3, firstNode)
	contract := testContract
	alt := `security: [ { $ref: "#/components/securitySchemes/apiKey" } ]`
	contract = strings.Replace(contract, alt, `security: [ { $ref: "#/components/securitySchemes/apiKey" }, { $ref: "#/components/securitySchemes/ordersWrite" } ]`, 1) // produceOrders
	contract = strings.Replace(contract, alt, `security: [ { $ref: "#/components/securitySchemes/apiKey" }, { $ref: "#/components/securitySchemes/ordersRead" } ]`, 1)  // consumeOrders
	contract = strings.Replace(contract, "    apiKey: { type: plain }\n", "    apiKey: { type: plain }\n"+oauthSchemes, 1)
	if edit != nil {
		contract = edit(contract)
	}
	snap := env.load(cfg, contract, store)
	if !snap.Clusters["shop"].OAuth {
		t.Fatal("the contract admits no token")
	}
	e := env.start(snap)
	env.boot = fmt.Sprintf("127.0.0.1:%d", base)
	if !env.real {
		env.direct = e.EmbeddedBrokers()["events"]
	}
	return &oauthEnv{testEnv: env, issuer: ti, key: key}
}

// oauthSchemes is the contract's security schemes (under
// components.securitySchemes) of tokens carrying orders:write and
// orders:read.
const oauthSchemes = `    ordersWrite:
      type: oauth2
      flows: { clientCredentials: { tokenUrl: "https://login.example.net/token", availableScopes: { "orders:write": Produce orders } } }
      scopes: ["orders:write"]
    ordersRead:
      type: oauth2
      flows: { clientCredentials: { tokenUrl: "https://login.example.net/token", availableScopes: { "orders:read": Read orders } } }
      scopes: ["orders:read"]
`

// issuerAuth is the lines under auth that trust the test issuer ti
// (discovery, audience kafka, the tenant in claim org).
func issuerAuth(ti *testkit.Issuer) string {
	return fmt.Sprintf(`  issuers:
    - name: test
      discovery: %s
      audience: kafka
      tenant_claim: org
      ca_file: ./issuer-ca.crt
`, ti.Discovery())
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// token is a token of the issuer (tenant acme, subject billing) with the claims edited.
func (oe *oauthEnv) token(edits map[string]any) string {
	return oe.key.Sign(oe.t, testkit.Claims(oe.issuer.URL, edits))
}

// tokenClient is a franz-go client authenticating with SASL OAUTHBEARER.
func (oe *oauthEnv) tokenClient(tok string, opts ...kgo.Opt) *kgo.Client {
	oe.t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(oe.boot),
		kgo.SASL(oauth.Auth{Token: tok}.AsMechanism()),
		kgo.RequestRetries(2),
		kgo.RetryTimeout(5 * time.Second),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		oe.t.Fatal(err)
	}
	oe.t.Cleanup(cl.Close)
	return cl
}

// I2: a token carrying orders:write produces, one carrying orders:read
// consumes; the records land in the tenant's physical topic.
func TestOAuthE2EProduceConsume(t *testing.T) {
	oe := newOAuthEnv(t)
	prod := oe.tokenClient(oe.token(map[string]any{"scope": "orders:write"}))
	produceN(t, prod, "orders", 10, "tok")
	cons := oe.tokenClient(oe.token(map[string]any{"scope": "orders:read"}),
		kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := consumeAll(t, cons, 10, 15*time.Second)
	if len(got) != 10 {
		t.Fatalf("consumed %d records with a token, want 10", len(got))
	}
	for i, r := range got {
		if !strings.HasPrefix(string(r.Value), "tok-") {
			t.Fatalf("record %d: %q", i, r.Value)
		}
	}
	direct := oe.directClient(kgo.ConsumeTopics(oe.phys("acme", "orders")), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if n := len(consumeAll(t, direct, 10, 10*time.Second)); n != 10 {
		t.Fatalf("the broker holds %d records in %s, want 10", n, oe.phys("acme", "orders"))
	}
}

// I2, I4, issue 5 item 6: a token without exp, signed by an unknown key,
// for another audience, or with alg none, and a tenant with '_': each
// SASL_AUTHENTICATION_FAILED, logged with its cause, never the token.
func TestOAuthE2ERefused(t *testing.T) {
	oe := newOAuthEnv(t)
	rogue := testkit.NewSigningKey(t, "rogue", jose.ES256)
	iss := oe.issuer.URL
	cases := []struct{ name, tok, cause string }{
		{"without exp", oe.token(map[string]any{"exp": nil}), "without exp"},
		{"unknown key", rogue.Sign(t, testkit.Claims(iss, nil)), "key unknown to issuer"},
		{"other audience", oe.token(map[string]any{"aud": "billing-api"}), "audience is not"},
		{"alg none", testkit.Unsigned("none", oe.key.Kid, testkit.Claims(iss, nil), ""), "algorithm not allowed: none"},
		{"expired", oe.token(map[string]any{"exp": time.Now().Add(-time.Minute).Unix()}), "token expired"},
		{"tenant with _", oe.token(map[string]any{"org": "acme_corp"}), "tenant missing or not letters"},
	}
	for _, c := range cases {
		cl, err := kgo.NewClient(kgo.SeedBrokers(oe.boot), kgo.SASL(oauth.Auth{Token: c.tok}.AsMechanism()), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = cl.Ping(ctx)
		cancel()
		cl.Close()
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("%s: %v, want SASL_AUTHENTICATION_FAILED", c.name, err)
		}
		line := oe.waitLog(5*time.Second, "kafka authentication refused", c.cause)
		for _, part := range strings.Split(c.tok, ".") {
			if len(part) > 8 && strings.Contains(line, part) {
				t.Fatalf("%s: the log line shows the token: %s", c.name, line)
			}
		}
	}
}

// D4: a token carrying orders:read only cannot produce.
func TestOAuthE2EReadOnlyCannotProduce(t *testing.T) {
	oe := newOAuthEnv(t)
	reader := oe.tokenClient(oe.token(map[string]any{"scope": "orders:read"}), kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := reader.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce with orders:read only: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}
