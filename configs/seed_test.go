package configs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// seedUpstreamAuth are the seed 001 example's lines of the upstream's TLS and
// SASL towards the brokers.
const seedUpstreamAuth = `    tls: { server_name: kafka.internal }
    sasl: { mechanism: SCRAM-SHA-512, username: flexway, password: "file:./secrets/kafka-password" }   # testdata: was file:/etc/flexway-secrets/kafka/password
`

// TestSeedExampleUpstreamAuth: seed 001's full example (testdata/seed001)
// sets the upstream's tls and sasl, served (issue 9): Load keeps them, the
// password read from its file (never the "file:" reference).
func TestSeedExampleUpstreamAuth(t *testing.T) {
	yml := readFile(t, "testdata/seed001/flexway.yaml")
	if !strings.Contains(yml, seedUpstreamAuth) {
		t.Fatal("the seed's upstream lines moved")
	}
	s, err := Load("testdata/seed001/flexway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	up := s.Upstreams["events"]
	if up.TLS == nil || up.TLS.ServerName != "kafka.internal" || up.SASL == nil || up.SASL.Mechanism != "SCRAM-SHA-512" || up.SASL.Username != "flexway" {
		t.Fatalf("upstream = %+v", up)
	}
	want := strings.TrimRight(readFile(t, "testdata/seed001/secrets/kafka-password"), "\r\n")
	if string(up.SASL.Password) != want || strings.HasPrefix(string(up.SASL.Password), "file:") {
		t.Errorf("the password is not the file's content")
	}
}

// TestSeedExampleLoads: seed 001's example flexway.yaml and asyncapi.yaml
// (testdata/seed001, copied line for line; only the password file's path is
// rewritten, see its README) load as they are (SPEC C1, C2, I1, L2), their
// upstream's tls and sasl served (the checks kept for the version that
// serves them).
func TestSeedExampleLoads(t *testing.T) {
	s, err := load("testdata/seed001/flexway.yaml", true)
	if err != nil {
		t.Fatal(err)
	}
	shop := s.Clusters["shop"]
	if shop == nil || shop.Upstream != "events" || shop.Prefix != "" || !shop.Plain || !shop.OAuth || shop.X509 {
		t.Fatalf("shop = %+v", shop)
	}
	if pc := shop.Plaintext; pc == nil || pc.Ports.From != 19092 || pc.Ports.To != 19095 || pc.FirstNodeID != 0 {
		t.Errorf("fallback = %+v", pc)
	}
	if s.Listener.Plaintext.AdvertisedHost != "flexway-kafka.flexway.svc.cluster.local" || !s.Listener.Plaintext.MeshOnly {
		t.Errorf("plaintext = %+v", s.Listener.Plaintext)
	}
	p, c := s.Operations["produceOrders"], s.Operations["consumeOrders"]
	if p == nil || c == nil {
		t.Fatalf("operations = %v", s.Operations)
	}
	if p.Action != "send" || !p.Transactions || !p.Plain || !reflect.DeepEqual(p.OAuthScopes, [][]string{{"orders:write"}}) {
		t.Errorf("produceOrders = %+v", p)
	}
	if c.Action != "receive" || c.Transactions || !c.Plain || !reflect.DeepEqual(c.OAuthScopes, [][]string{{"orders:read"}}) {
		t.Errorf("consumeOrders = %+v", c)
	}
	up := s.Upstreams["events"]
	if up.SASL.Mechanism != "SCRAM-SHA-512" || up.SASL.Username != "flexway" || up.SASL.Password.Value() != "not-a-real-password" || up.TLS.ServerName != "kafka.internal" || up.Timeout.String() != "5s" {
		t.Errorf("upstream = %+v sasl %+v", up, up.SASL)
	}
	if iss := s.File.Auth.Issuers; len(iss) != 1 || iss[0].TenantClaim != "org" || iss[0].Audience != "kafka" {
		t.Errorf("issuers = %+v", iss)
	}
	if k := s.Keys["acme-orders-producer"]; k == nil || k.Hash != HashKey("test-key-producer") {
		t.Errorf("key = %+v", k)
	}
}

// TestSeedSnippetsLoad: every flexway.yaml snippet of seed 001 (TLS listener,
// upstreams, sessions, bounds, budget modes, quotas, observability) and seed
// 002's bounds example, each laid over the seed 001 example without its
// upstream's tls and sasl, load (SPEC L1, L3, S3, B1, B2, Q1, Q3, U1); those
// that set a key this version does not serve are refused with exactly the
// keys named (issue 13.7), and load with them served. Their /etc/... paths
// are rewritten to certificates and secrets the test makes.
func TestSeedSnippetsLoad(t *testing.T) {
	snippets, _ := filepath.Glob("testdata/seed001/snippets/*.yaml")
	more, _ := filepath.Glob("testdata/seed002/*.yaml")
	snippets = append(snippets, more...)
	if len(snippets) < 10 {
		t.Fatalf("snippets = %v", snippets)
	}
	// The keys each snippet sets that are not served, in the report's order.
	notServedBy := map[string][]string{}
	baseYAML := strings.Replace(readFile(t, "testdata/seed001/flexway.yaml"), seedUpstreamAuth, "", 1)
	for _, sn := range snippets {
		t.Run(sn, func(t *testing.T) {
			t.Setenv("COUNTERS_URL", "redis://127.0.0.1:6379/0")
			dir := t.TempDir()
			pems := testPEMs(t)
			for name, content := range map[string]string{
				"asyncapi.yaml":                        readFile(t, "testdata/seed001/asyncapi.yaml"),
				"api-keys.yaml":                        readFile(t, "testdata/seed001/api-keys.yaml"),
				"secrets/kafka-password":               "not-a-real-password\n",
				"etc/flexway-kafka-tls/tls.crt":        pems.cert,
				"etc/flexway-kafka-tls/tls.key":        pems.key,
				"etc/flexway-kafka-tls/ca.crt":         pems.cert,
				"etc/flexway-secrets/kafka/password":   "not-a-real-password\n",
				"etc/flexway-secrets/kafka/ca.crt":     pems.cert,
				"etc/flexway-secrets/redpanda/ca.crt":  pems.cert,
				"etc/flexway-secrets/redpanda/tls.crt": pems.cert,
				"etc/flexway-secrets/redpanda/tls.key": pems.key,
			} {
				writeFile(t, filepath.Join(dir, name), content)
			}
			overlay := strings.ReplaceAll(readFile(t, sn), "/etc/", filepath.Join(dir, "etc")+"/")
			var merged, top map[string]any
			if err := yaml.Unmarshal([]byte(baseYAML), &merged); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal([]byte(overlay), &top); err != nil {
				t.Fatal(err)
			}
			deepMerge(merged, top)
			out, err := yaml.Marshal(merged)
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.Join(dir, "flexway.yaml")
			writeFile(t, name, string(out))
			s, err := Load(name)
			if refused := notServedBy[filepath.Base(sn)]; refused != nil {
				var le *LoadError
				if !errors.As(err, &le) {
					t.Fatalf("Load = %v, want the keys not served: %q", err, refused)
				}
				var got []string
				for _, fe := range le.Errors {
					got = append(got, fe.Path)
					if !strings.HasPrefix(fe.Msg, "not served by this version (") || fe.File != name || fe.Line == 0 {
						t.Errorf("%v", fe)
					}
				}
				slices.Sort(got)
				slices.Sort(refused)
				if !slices.Equal(got, refused) {
					t.Errorf("refused %q, want %q", got, refused)
				}
				s, err = load(name, true)
			}
			if err != nil {
				t.Fatalf("%v\n--- flexway.yaml:\n%s", err, out)
			}
			if s.Clusters["shop"] == nil {
				t.Error("cluster shop missing")
			}
		})
	}
}

// TestQuickstart: configs/quickstart loads, and is what its comments say:
// cluster shop on an embedded upstream, the plaintext fallback on 127.0.0.1,
// API keys only, and each <id>.key beside the store hashes to its entry
// (SPEC C1, C2, I1, L2).
func TestQuickstart(t *testing.T) {
	s, err := Load("quickstart/flexway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	up := s.Upstreams["events"]
	if up == nil || up.Embedded == nil || up.Embedded.Brokers != 3 || len(up.Brokers) != 0 || up.Embedded.Host != "127.0.0.1" || !*up.Embedded.SeedTopics {
		t.Fatalf("events = %+v", up)
	}
	k := s.Listener
	if k.TLS != nil || k.Plaintext == nil || !k.Plaintext.MeshOnly || k.Plaintext.AdvertisedHost != "127.0.0.1" || k.Plaintext.BindHost != "127.0.0.1" {
		t.Fatalf("listener = %+v", k)
	}
	shop := s.Clusters["shop"]
	if shop == nil || shop.Plaintext == nil || shop.Plaintext.Ports != (PortRange{19092, 19095}) || !shop.Plain || shop.OAuth || shop.X509 {
		t.Fatalf("shop = %+v", shop)
	}
	// Three embedded brokers need three node ports after the bootstrap.
	if n := shop.Plaintext.Ports.To - shop.Plaintext.Ports.From; n < up.Embedded.Brokers {
		t.Errorf("the range holds %d nodes, the upstream runs %d brokers", n, up.Embedded.Brokers)
	}
	if s.File.Server.Admin == nil || s.File.Server.Admin.Address != "127.0.0.1:9464" {
		t.Errorf("admin = %+v", s.File.Server.Admin)
	}
	if p := s.Operations["produceOrders"]; p == nil || !p.Transactions || p.Action != "send" {
		t.Errorf("produceOrders = %+v", p)
	}
	if c := s.Operations["consumeOrders"]; c == nil || c.AdminScope != "orders:admin" || c.Action != "receive" {
		t.Errorf("consumeOrders = %+v", c)
	}
	want := map[string]struct {
		tenant string
		ops    []string
	}{
		"acme-orders-producer": {"acme", []string{"produceOrders"}},
		"acme-orders-reader":   {"acme", []string{"consumeOrders"}},
		"acme-app":             {"acme", []string{"produceOrders", "consumeOrders"}},
		"globex-app":           {"globex", []string{"produceOrders", "consumeOrders"}},
	}
	if len(s.Keys) != len(want) {
		t.Errorf("%d keys, want %d", len(s.Keys), len(want))
	}
	for id, w := range want {
		key := s.Keys[id]
		if key == nil || key.Tenant != w.tenant || !reflect.DeepEqual(key.Operations, w.ops) {
			t.Errorf("%s = %+v", id, key)
			continue
		}
		plain := strings.TrimRight(readFile(t, filepath.Join("quickstart", id+".key")), "\n")
		if len(plain) != 64 || HashKey(plain) != key.Hash {
			t.Errorf("%s.key does not hash to the store's entry", id)
		}
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// deepMerge lays top over base: mappings merge key by key, anything else is
// replaced.
func deepMerge(base, top map[string]any) {
	for k, v := range top {
		if tm, ok := v.(map[string]any); ok {
			if bm, ok := base[k].(map[string]any); ok {
				deepMerge(bm, tm)
				continue
			}
		}
		base[k] = v
	}
}
