package configs

import (
	"reflect"
	"testing"
)

// TestStartOnlyDiff: a reload that changes a start-only key is named, one
// that changes only reloadable keys is not (SPEC S1).
func TestStartOnlyDiff(t *testing.T) {
	old, errs := base().withTLS().load(t)
	if errs != "" {
		t.Fatal(errs)
	}
	for _, tc := range []struct {
		name  string
		edits []edit
		want  []string
	}{
		{"nothing changed", nil, nil},
		{"S1 bounds, timeouts, contract and keys are reloadable", []edit{
			{"flexway", "    sni_domain: kafka.example.com\n", "    sni_domain: kafka.example.com\n    max_session_lifetime: 30m\n    idle_timeout: 5m\n    max_in_flight_bytes: 32MiB\n    on_tenant_budget_exceeded: close\n"},
			{"asyncapi", "{ cluster: shop, transactions: true }", "{ cluster: shop }"},
			{"keys", "tenant: acme\n    operations: [consumeOrders]", "tenant: globex\n    operations: [consumeOrders]"},
		}, nil},
		{"S1 address, sni_domain, advertised_port", []edit{
			{"flexway", `address: ":9093"`, `address: ":9094"`},
			{"flexway", "sni_domain: kafka.example.com", "sni_domain: kafka.example.org"},
		}, []string{"listeners.kafka.address", "listeners.kafka.advertised_port", "listeners.kafka.sni_domain"}},
		{"S1 tls", []edit{{"flexway", "      client_ca_file: ca.crt\n", ""}}, []string{"listeners.kafka.tls"}},
		{"S1 max_connections and in-flight budgets", []edit{
			{"flexway", "    sni_domain: kafka.example.com\n", "    sni_domain: kafka.example.com\n    max_connections: 100\n    max_total_in_flight_bytes: 2GiB\n"},
		}, []string{"listeners.kafka.max_connections", "listeners.kafka.max_tenant_in_flight_bytes", "listeners.kafka.max_total_in_flight_bytes"}},
		{"S1 the plaintext range", []edit{
			{"flexway", "    sni_domain: kafka.example.com\n", "    sni_domain: kafka.example.com\n    plaintext:\n      mesh_only: true\n      advertised_host: h\n      clusters: { shop: { ports: { from: 19092, to: 19095 } } }\n"},
		}, []string{"listeners.kafka.plaintext"}},
		{"the admin address is reloadable (cmd/flexway moves the endpoint)", []edit{
			{"flexway", "version: 1\n", "version: 1\nserver: { admin: { address: \"127.0.0.1:9464\" } }\n"},
		}, nil},
		{"the shared counter store (issue 8.4: its counts live with the process)", []edit{
			{"flexway", "version: 1\n", "version: 1\nserver: { counters: { store: \"redis://127.0.0.1:6390\" } }\n"},
		}, []string{"server.counters"}},
		{"a quota policy's limits are reloadable", []edit{
			{"flexway", "version: 1\n", "version: 1\npolicies: { definitions: { plans: { type: quota, config: { limits: { day: 5 } } } } }\n"},
		}, nil},
		{"observability.otlp (the exporters are made at start)", []edit{
			{"flexway", "version: 1\n", "version: 1\nobservability: { otlp: { endpoint: \"http://127.0.0.1:4318\", sampling_ratio: 0.5 } }\n"},
		}, []string{"observability.otlp"}},
		// observability.kafka.budget_wait_buckets: the histogram's bounds
		// are made at start (start-only).
		{"histogram bounds", []edit{
			{"flexway", "version: 1\n", "version: 1\nobservability: { kafka: { budget_wait_buckets: [1ms, 1s] } }\n"},
		}, []string{"observability.kafka.budget_wait_buckets"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// unbuilt: for the histogram row's key; the others hold none.
			next, errs := base().withTLS().unbuilt().apply(t, tc.edits...).load(t)
			if errs != "" {
				t.Fatal(errs)
			}
			// Paths differ between two temporary folders: compare the
			// files as named, as a reload of one path would.
			next.Listener.TLS = sameTLS(next.Listener.TLS, old.Listener.TLS)
			if got := next.StartOnlyDiff(old); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("StartOnlyDiff = %q, want %q", got, tc.want)
			}
		})
	}
	if (&Snapshot{}).StartOnlyDiff(nil) != nil {
		t.Error("a first load has a diff")
	}
}

// sameTLS rewrites next's resolved paths into old's folder, keeping which
// files are named.
func sameTLS(next, old *ListenerTLS) *ListenerTLS {
	if next == nil || old == nil {
		return next
	}
	c := *next
	swap := func(p *string, ref string) {
		if *p != "" {
			*p = ref
		}
	}
	swap(&c.CertFile, old.CertFile)
	swap(&c.KeyFile, old.KeyFile)
	swap(&c.ClientCAFile, old.ClientCAFile)
	return &c
}
