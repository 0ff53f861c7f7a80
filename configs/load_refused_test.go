// Configurations refused at load: every refusal, all reported at once at
// their file and line, schemes the listener does not verify, and the bounds
// of what a YAML file may hold.

package configs

import (
	"strings"
	"testing"
)

// TestLoadRefused is seed 002 "Refused at load" (SPEC C3), every item, and the
// listener's, upstreams' and stores' own checks: each row must be refused
// with every wanted substring in the report.
func TestLoadRefused(t *testing.T) {
	for _, cases := range [][]refusedCase{
		refusedServedCases(), refusedReferenceCases(), refusedListenerCases(),
		refusedBoundsCases(), refusedUpstreamCases(), refusedAuthCases(),
	} {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				s, errs := tc.f(t).load(t)
				if s != nil || errs == "" {
					t.Fatal("loaded, want refused")
				}
				for _, w := range tc.want {
					if !strings.Contains(errs, w) {
						t.Errorf("missing %q in:\n%s", w, errs)
					}
				}
				if strings.Contains(errs, "hunter2") {
					t.Errorf("a secret leaked into the report:\n%s", errs)
				}
			})
		}
	}
}

// TestLoadReportsAllAtOnce: every problem of every file in one report, each
// at its file and line, sorted file by file (SPEC C3); the keys not served
// among them (issue 13.7), each named, and nothing said of their values.
func TestLoadReportsAllAtOnce(t *testing.T) {
	f := base().withUpstreamAuth().apply(t,
		edit{"flexway", "    timeout: 5s\n", "    timeout: 5s\n    retries: 3\n"},         // line 11: unknown key
		edit{"flexway", "mechanism: SCRAM-SHA-512", "mechanism: SCRAM-SHA-1"},             // line 9
		edit{"flexway", "  kafka:\n", "  kafka:\n    max_session_lifetime: 30s\n"},        // line 22
		edit{"flexway", "      mesh_only: true\n", "      mesh_only: false\n"},            // line 24
		edit{"asyncapi", "{ cluster: shop, transactions: true }", "{ cluster: shop.eu }"}, // line 15
		edit{"asyncapi", "    apiKey: { type: plain }", "    apiKey: { type: scramSha256 }"},
		edit{"keys", "operations: [consumeOrders]", "operations: [consumeOrder]"}, // line 10
	)
	_, errs := f.load(t)
	want := []string{
		`flexway.yaml:9: upstreams.events.sasl.mechanism: "SCRAM-SHA-1" is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512`,
		`flexway.yaml:11: upstreams.events.retries: unknown key`,
		`flexway.yaml:22: listeners.kafka.max_session_lifetime: 30s is outside 1m..24h`,
		`flexway.yaml:24: listeners.kafka.plaintext.mesh_only: clear text is refused without mesh_only: true`,
		`asyncapi.yaml:15: operations.produceOrders.x-flexway-kafka-proxy.cluster: "shop.eu" is not a DNS label`,
		`asyncapi.yaml:17: operations.produceOrders.security[0]: scheme "apiKey": type scramSha256 is not verified by the Kafka listener`,
		`asyncapi.yaml:25: operations.consumeOrders.security[0]: scheme "apiKey": type scramSha256 is not verified`,
		`api-keys.yaml:10: keys[1].operations[0]: unknown operation "consumeOrder"`,
	}
	lines := strings.Split(errs, "\n")
	if len(lines) != len(want) {
		t.Errorf("%d problems reported, want %d:\n%s", len(lines), len(want), errs)
	}
	for i, w := range want {
		if i >= len(lines) || !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: want prefix %q\nreport:\n%s", i, w, errs)
		}
	}
}

// TestLoadSchemesNotVerified: each scheme the listener does not verify is
// refused, at the operation's line (seed 002 "Refused at load").
func TestLoadSchemesNotVerified(t *testing.T) {
	for _, scheme := range []string{
		"{ type: scramSha256 }", "{ type: scramSha512 }", "{ type: gssapi }",
		"{ type: apiKey, in: user }", "{ type: httpApiKey, name: X-Key, in: header }",
		"{ type: userPassword }", "{ type: http, scheme: bearer }", "{ type: symmetricEncryption }",
	} {
		t.Run(scheme, func(t *testing.T) {
			f := base().apply(t, edit{"asyncapi", "    apiKey: { type: plain }", "    apiKey: " + scheme})
			_, errs := f.load(t)
			if !strings.Contains(errs, `asyncapi.yaml:17: operations.produceOrders.security[0]: scheme "apiKey"`) ||
				!strings.Contains(errs, "is not verified by the Kafka listener") {
				t.Errorf("report:\n%s", errs)
			}
		})
	}
}

// TestParseBounds: what a YAML file may hold (issue 13.8): nesting up to
// maxNesting levels, block or flow, and aliases that add up to
// maxAliasValues values, parse; one more level, or an alias beyond, is
// refused at its line. Anchors used as the seeds' examples use them stay
// far below.
func TestParseBounds(t *testing.T) {
	block := func(n int) string { // n nested mappings, by indentation
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(strings.Repeat(" ", i) + "k:\n")
		}
		return b.String() + strings.Repeat(" ", n) + "v\n"
	}
	flow := func(n int) string { return "x: " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n" }
	entries := func(n int) string { return "x:\n" + strings.Repeat("- ", n) + "v\n" }
	// aliases: an anchor of size values, and n aliases of it.
	aliases := func(size, n int) string {
		return "a: &a [" + strings.Repeat("1, ", size-1) + "1]\nb: [" + strings.Repeat("*a, ", n-1) + "*a]\n"
	}
	for _, tc := range []struct {
		name, yaml string
		want       string // "" parses
	}{
		{"block at the bound", block(maxNesting), ""},
		{"block beyond", block(maxNesting + 1), "nested more than 100 levels deep"},
		{"flow at the bound", flow(maxNesting), ""},
		{"flow beyond", flow(maxNesting + 1), "x.yaml:1: nested more than 100 levels deep"},
		{"list entries on one line beyond", entries(maxNesting + 1), "x.yaml:2: nested more than 100 levels deep"},
		{"aliases adding 1M values", aliases(1000, 1000), ""},
		{"aliases adding more than 1M values", aliases(1000, 1050), "x.yaml:2: its aliases expand to more than 1048576 values"},
		{"an alias inside its own anchor", "a: &a [1, *a]\n", ""},
		{"not UTF-8", "a: caf\xe9\n", "x.yaml:1: not YAML text: byte 6 is not UTF-8"},
		{"a form feed", "a: 1\n\fb: 2\n", "x.yaml:2: not YAML text: byte 5 is the control character 0x0c"},
		{"tabs, CRLF and a BOM are text", "\ufeffa:\tb\r\nc: d\r\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r report
			_, ok := parseDoc("x.yaml", []byte(tc.yaml), &r)
			got := (&LoadError{Errors: r.errs}).Error()
			if tc.want == "" && !ok {
				t.Errorf("refused: %s", got)
			}
			if tc.want != "" && (ok || !strings.Contains(got, tc.want)) {
				t.Errorf("parsed %v, report %q, want %q", ok, got, tc.want)
			}
		})
	}
}
