// Configurations that load, and what Load builds from them: the good rows,
// the defaults, the snapshot, file secrets, and the keys once not served.
// The refusals are in load_refused_test.go.

package configs

import (
	"strings"
	"testing"
)

// TestLoadGood: configurations that must load (SPEC C1, C2, I1, L2).
func TestLoadGood(t *testing.T) {
	for _, tc := range append(goodContractCases(), goodStoreCases()...) {
		t.Run(tc.name, func(t *testing.T) {
			s, errs := tc.f(t).load(t)
			if errs != "" {
				t.Fatalf("Load failed:\n%s", errs)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

// goodCase is one configuration that must load, and what its snapshot
// must then hold (check may be nil).
type goodCase struct {
	name  string
	f     func(t *testing.T) fixture
	check func(t *testing.T, s *Snapshot)
}

// goodContractCases: the seed's shape, and contracts written the other ways
// the schema allows (SPEC C1, C2).
func goodContractCases() []goodCase {
	return []goodCase{
		{name: "base: the seed's shape", f: func(*testing.T) fixture { return base() }},
		{name: "C1 TLS listener with client CA and an X509 alternative", f: func(t *testing.T) fixture {
			return base().withTLS().apply(t,
				edit{"asyncapi", `      - $ref: "#/components/securitySchemes/ordersRead"`, `      - $ref: "#/components/securitySchemes/ordersRead"
      - { type: X509 }`})
		}, check: func(t *testing.T, s *Snapshot) {
			if !s.Operations["consumeOrders"].X509 || !s.Clusters["shop"].X509 {
				t.Error("X509 alternative not read")
			}
			if s.Listener.AdvertisedPort != 9093 {
				t.Errorf("advertised_port = %d, want the address's 9093", s.Listener.AdvertisedPort)
			}
		}},
		{name: "C2 apiKey in password is plain; openIdConnect is a token alternative; inline schemes", f: func(t *testing.T) fixture {
			return base().apply(t,
				edit{"asyncapi", `    apiKey: { type: plain }`, `    apiKey: { type: apiKey, in: password }`},
				edit{"asyncapi", `      - $ref: "#/components/securitySchemes/ordersRead"`, `      - { type: openIdConnect, openIdConnectUrl: "https://login.example.net/.well-known/openid-configuration", scopes: ["orders:read", "orders:audit"] }`})
		}, check: func(t *testing.T, s *Snapshot) {
			op := s.Operations["consumeOrders"]
			if !op.Plain || len(op.OAuthScopes) != 1 || strings.Join(op.OAuthScopes[0], ",") != "orders:read,orders:audit" {
				t.Errorf("consumeOrders = %+v", op)
			}
		}},
		{name: "C1 prefix ending with a dot", f: func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", `"{tenant}.orders"`, `"prod.{tenant}.orders"`})
		}, check: func(t *testing.T, s *Snapshot) {
			if s.Clusters["shop"].Prefix != "prod." {
				t.Errorf("prefix = %q", s.Clusters["shop"].Prefix)
			}
		}},
		{name: "C1 parameter by $ref to components.parameters", f: func(t *testing.T) fixture {
			return base().apply(t,
				edit{"asyncapi", `      tenant: { x-flexway-bind: tenant }`, `      tenant: { $ref: "#/components/parameters/tenant" }`},
				edit{"asyncapi", "components:\n", "components:\n  parameters:\n    tenant: { description: the tenant, x-flexway-bind: tenant }\n"})
		}},
		{name: "C1 operations not served to Kafka are not judged", f: func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", "components:\n", `  httpOnly:
    action: send
    channel: { $ref: "#/channels/nowhere" }
    security: [{}]
components:
`})
		}},
	}
}

// goodStoreCases: key stores, clusters, YAML features and quota settings
// that must load (SPEC I1, I4, L2, Q3).
func goodStoreCases() []goodCase {
	return []goodCase{
		{name: "I4 a tenant that is not letters, digits and '-' still loads", f: func(t *testing.T) fixture {
			return base().apply(t, edit{"keys", "tenant: acme\n    operations: [consumeOrders]", "tenant: acme_corp.eu\n    operations: [consumeOrders]"})
		}, check: func(t *testing.T, s *Snapshot) {
			if s.Keys["acme-orders-reader"].Tenant != "acme_corp.eu" {
				t.Error("tenant not kept")
			}
		}},
		{name: "I1 an empty key store", f: func(t *testing.T) fixture {
			f := base()
			f.keys = "keys: []\n"
			return f
		}},
		{name: "L2 two clusters, two upstreams, disjoint ranges", f: func(t *testing.T) fixture {
			return base().apply(t,
				edit{"flexway", "auth:\n", "  other:\n    protocol: kafka\n    brokers: [other-0:9092]\nauth:\n"},
				edit{"flexway", "        shop: { ports: { from: 19092, to: 19095 }, first_node_id: 0 }\n",
					"        shop: { ports: { from: 19092, to: 19095 }, first_node_id: 0 }\n        lab: { ports: { from: 19096, to: 19099 }, first_node_id: 1 }\n"},
				edit{"asyncapi", "components:\n", `  labOrders:
    action: send
    channel: { $ref: "#/channels/orders" }
    x-flexway-upstream: other
    x-flexway-kafka-proxy: { cluster: lab }
    security: [{ type: plain }]
components:
`})
		}, check: func(t *testing.T, s *Snapshot) {
			lab := s.Clusters["lab"]
			if lab == nil || lab.Upstream != "other" || lab.Plaintext.FirstNodeID != 1 || len(lab.Topics["orders"].Send) != 1 {
				t.Errorf("lab = %+v", lab)
			}
		}},
		{name: "YAML anchors and merge keys", f: func(t *testing.T) fixture {
			return base().apply(t,
				edit{"flexway", "  events:\n    protocol: kafka\n", "  events: &up\n    protocol: kafka\n"},
				edit{"flexway", "auth:\n", "  copy:\n    <<: *up\nauth:\n"})
		}, check: func(t *testing.T, s *Snapshot) {
			if c := s.Upstreams["copy"]; c == nil || c.Protocol != "kafka" || c.Timeout.D().Seconds() != 5 || len(c.Brokers) != 3 {
				t.Errorf("copy = %+v", c)
			}
		}},
		{name: "Q3 quota policy with the counter store from the environment", f: func(t *testing.T) fixture {
			t.Setenv("COUNTERS_URL", "redis://redis:6379/0")
			return base().unbuilt().apply(t, edit{"flexway", "listeners:\n  kafka:\n", `server:
  counters: { store: "${COUNTERS_URL}" }
policies:
  definitions:
    plans: { type: quota, config: { limits: { day: 100000, month: 2000000 } } }
listeners:
  kafka:
    quotas: { quota: plans, client: { producer_byte_rate: 1MiB, request_rate: 200 } }
`})
		}, check: func(t *testing.T, s *Snapshot) {
			if s.File.Server.Counters.Store != "redis://redis:6379/0" || s.Listener.Quotas.Client.ProducerByteRate != 1<<20 {
				t.Errorf("counters %+v quotas %+v", s.File.Server.Counters, s.Listener.Quotas)
			}
		}},
	}
}

// TestLoadDefaults: the seeds' defaults, applied to a minimal file (seed 002
// "Listener bounds", seed 001 "Quotas"; SPEC L3, S3, B1, B2, Q1, U1).
func TestLoadDefaults(t *testing.T) {
	f := base().unbuilt().apply(t,
		edit{"flexway", "    timeout: 5s\n", ""},
		edit{"flexway", "  kafka:\n", "  kafka:\n    quotas: {}\n"},
		edit{"flexway", "auth:\n", "  local:\n    protocol: kafka\n    embedded: {}\nauth:\n"})
	s, errs := f.load(t)
	if errs != "" {
		t.Fatal(errs)
	}
	k := s.Listener
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"max_request_bytes", k.MaxRequestBytes, ByteSize(16 << 20)},
		{"max_response_bytes", k.MaxResponseBytes, ByteSize(64 << 20)},
		{"max_connections", k.MaxConnections, 4096},
		{"auth_timeout", k.AuthTimeout.String(), "10s"},
		{"idle_timeout", k.IdleTimeout.String(), "10m0s"},
		{"max_unauthenticated_connections", *k.MaxUnauthenticatedConnections, 256},
		{"max_connections_per_ip", *k.MaxConnectionsPerIP, 16},
		{"max_connections_per_tenant", *k.MaxConnectionsPerTenant, 1024},
		{"max_connection_rate_per_tenant", *k.MaxConnectionRatePerTenant, 100},
		{"max_fetch_wait", k.MaxFetchWait.String(), "30s"},
		{"max_in_flight_bytes", k.MaxInFlightBytes, ByteSize(64 << 20)},
		{"max_total_in_flight_bytes", k.MaxTotalInFlightBytes, ByteSize(1 << 30)},
		{"max_tenant_in_flight_bytes", k.MaxTenantInFlightBytes, ByteSize(128 << 20)},
		{"max_session_lifetime", k.MaxSessionLifetime.String(), "1h0m0s"},
		{"max_topic_partitions", k.MaxTopicPartitions, 64},
		{"on_tenant_budget_exceeded", k.OnTenantBudgetExceeded, "wait"},
		{"quotas.window", k.Quotas.Window.String(), "1s"},
		{"quotas.max_throttle", k.Quotas.MaxThrottle.String(), "10s"},
		{"upstream timeout", s.Upstreams["events"].Timeout.String(), "5s"},
		{"embedded brokers", s.Upstreams["local"].Embedded.Brokers, 3},
		{"embedded host", s.Upstreams["local"].Embedded.Host, "127.0.0.1"},
		{"embedded partitions", s.Upstreams["local"].Embedded.Partitions, int32(3)},
		{"embedded seed_topics", *s.Upstreams["local"].Embedded.SeedTopics, true},
		{"audit off when absent", s.File.Audit == nil, true},
		{"observability closures", *s.File.Observability.Kafka.Closures, true},
		{"observability buckets", len(s.File.Observability.Kafka.BudgetWaitBuckets), 10},
		{"observability.otlp off when absent", s.File.Observability.OTLP == nil, true},
		{"server.shutdown_timeout", s.File.Server.ShutdownTimeout.String(), "10s"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// 0 is "off" for these two, and must stay 0 (SPEC B1).
	f = base().apply(t, edit{"flexway", "  kafka:\n", "  kafka:\n    max_connections_per_ip: 0\n    max_connection_rate_per_tenant: 0\n"})
	s, errs = f.load(t)
	if errs != "" {
		t.Fatal(errs)
	}
	if *s.Listener.MaxConnectionsPerIP != 0 || *s.Listener.MaxConnectionRatePerTenant != 0 {
		t.Error("an explicit 0 was replaced by the default")
	}
	// The tenant's share follows the total: an eighth of it (SPEC B2).
	f = base().apply(t, edit{"flexway", "  kafka:\n", "  kafka:\n    max_total_in_flight_bytes: 2GiB\n"})
	if s, errs = f.load(t); errs != "" || s.Listener.MaxTenantInFlightBytes != 256<<20 {
		t.Errorf("tenant share = %v (%s), want 256MiB", s.Listener.MaxTenantInFlightBytes, errs)
	}
}

// TestLoadSnapshot: what Load builds from the base (SPEC C1, C2, I1, L2).
func TestLoadSnapshot(t *testing.T) {
	s, errs := base().load(t)
	if errs != "" {
		t.Fatal(errs)
	}
	shop := s.Clusters["shop"]
	if shop == nil || shop.Upstream != "events" || shop.Prefix != "" || !shop.Plain || !shop.OAuth || shop.X509 {
		t.Fatalf("shop = %+v", shop)
	}
	if shop.Plaintext == nil || shop.Plaintext.Ports != (PortRange{19092, 19095}) {
		t.Errorf("plaintext = %+v", shop.Plaintext)
	}
	orders := shop.Topics["orders"]
	if orders == nil || len(orders.Send) != 1 || orders.Send[0].ID != "produceOrders" || len(orders.Receive) != 1 || orders.Receive[0].ID != "consumeOrders" {
		t.Fatalf("orders = %+v", orders)
	}
	p := s.Operations["produceOrders"]
	if !p.Transactions || p.Action != "send" || p.Channel != "orders" || !p.Plain || len(p.OAuthScopes) != 1 || p.OAuthScopes[0][0] != "orders:write" {
		t.Errorf("produceOrders = %+v", p)
	}
	if c := s.Operations["consumeOrders"]; c.AdminScope != "orders:admin" || c.Transactions {
		t.Errorf("consumeOrders = %+v", c)
	}
	if up := s.Upstreams["events"]; up.TLS != nil || up.SASL != nil {
		t.Errorf("upstream = %+v", up)
	}
	k := s.Keys["acme-orders-producer"]
	if k == nil || k.Hash != HashKey("test-key") || k.Tenant != "acme" || k.ExpiresAt.Year() != 2027 {
		t.Errorf("key = %+v", k)
	}
	if s.Keys["acme-orders-reader"].ExpiresAt.IsZero() == false {
		t.Error("a key without expires_at has an expiry")
	}
	if s.ContractPath == "" || s.KeyStorePath == "" || s.LoadedAt.IsZero() {
		t.Errorf("paths %q %q loaded at %v", s.ContractPath, s.KeyStorePath, s.LoadedAt)
	}
}

// TestLoadSecretFile: a "file:" secret is replaced by the file's content
// without its newline. Only the upstream's SASL password has one, a key not
// served yet: its reading is kept for the version that serves it.
func TestLoadSecretFile(t *testing.T) {
	s, errs := base().withUpstreamAuth().unbuilt().load(t)
	if errs != "" {
		t.Fatal(errs)
	}
	if got := s.Upstreams["events"].SASL.Password.Value(); got != "hunter2-secret" {
		t.Errorf("password = %q, want the file's content without its newline", got)
	}
}

// TestLoadNotServed: each key whose feature this version does not serve is
// refused at load, at its line, named, with nothing else said (issue 13.7):
// never accepted and ignored. Every key is served now: the rows are the keys
// once refused, which load (and load the same with notServed bypassed).
func TestLoadNotServed(t *testing.T) {
	t.Setenv("COUNTERS_URL", "redis://redis:6379/0")
	for _, tc := range []struct {
		name   string
		yaml   string // flexway.yaml's lines put before listeners:, or in listeners.kafka after "  kafka:\n" when they start with four spaces
		want   string // the whole report
		served string // in the report were the key served ("": it loads)
	}{
		{"listeners.kafka.quotas is served", "    quotas: { tenant: { producer_byte_rate: 10MiB }, client: { request_rate: 10 }, window: 2s, max_throttle: 5s }\n", "", ""},
		// Served (issue 8 item 4): the day/month budget and its store.
		{"listeners.kafka.quotas empty is served", "    quotas: {}\n", "", ""},
		{"server.counters is served", "server: { counters: { store: \"${COUNTERS_URL}\" } }\n", "", ""},
		{"server.counters beside server.admin is served", "server:\n  admin: { address: \"127.0.0.1:0\" }\n  counters: { store: \"${COUNTERS_URL}\" }\n", "", ""},
		{"policies are served", "policies:\n  definitions:\n    plans: { type: quota, config: { limits: { day: 100000 } } }\n", "", ""},
		{"observability.kafka.budget_wait_buckets is served", "observability:\n  kafka:\n    budget_wait_buckets: [100us, 1ms]\n", "", ""},
		{"observability.kafka.closures is served", "observability: { kafka: { closures: false } }\n", "", ""},
		{"server.admin is served", "server: { admin: { address: \"127.0.0.1:0\" } }\n", "", ""},
		{"an empty observability is nothing", "observability: {}\n", "", ""},
		{"observability.otlp is served", "observability: { otlp: { endpoint: \"http://127.0.0.1:4318\", protocol: grpc, sampling_ratio: 0.01 } }\n", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := base()
			switch {
			case strings.HasPrefix(tc.yaml, "upstreams.events."):
				// "upstreams.events.K: V": the key goes under the upstream, line 8.
				kv := strings.TrimPrefix(tc.yaml, "upstreams.events.")
				f = f.apply(t, edit{"flexway", "    timeout: 5s\n", "    " + kv + "\n    timeout: 5s\n"})
			case strings.HasPrefix(tc.yaml, "    "):
				f = f.apply(t, edit{"flexway", "  kafka:\n", "  kafka:\n" + tc.yaml})
			default:
				f = f.apply(t, edit{"flexway", "listeners:\n", tc.yaml + "listeners:\n"})
			}
			s, errs := f.load(t)
			if errs != tc.want {
				t.Errorf("report:\n%s\nwant:\n%s", errs, tc.want)
			}
			if tc.want == "" && s == nil {
				t.Error("not loaded")
			}
			// Served, the same file loads, or is refused by the key's own
			// check: the refusal above is notServed's, and hides the check.
			_, errs = f.unbuilt().load(t)
			if (tc.served == "") != (errs == "") || !strings.Contains(errs, tc.served) {
				t.Errorf("with the key served:\n%s\nwant: %q", errs, tc.served)
			}
		})
	}
}

// TestNotServedAll: the refusals are the keys the issue names, each with its
// row in TestLoadNotServed (a new row of notServed needs its test there).
func TestNotServedAll(t *testing.T) {
	var got []string
	for _, ns := range notServed {
		got = append(got, ns.key.String())
	}
	var want []string // every key read is served (issues 8-10)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("notServed = %q, want %q", got, want)
	}
}

// observability.otlp's own defaults: OTLP over HTTP, the metrics sent
// every minute, no span (sampling_ratio 0), the instance id left to the
// start (a UUID per replica).
func TestLoadOTLPDefaults(t *testing.T) {
	s, errs := base().apply(t, edit{"flexway", "version: 1\n", "version: 1\nobservability: { otlp: { endpoint: \"https://collector:4318/otel\" } }\n"}).load(t)
	if errs != "" {
		t.Fatal(errs)
	}
	o := s.File.Observability.OTLP
	if o.Protocol != "http/protobuf" || o.MetricsInterval.String() != "1m0s" || o.SamplingRatio != 0 || o.InstanceID != "" {
		t.Errorf("observability.otlp = %+v", *o)
	}
}
