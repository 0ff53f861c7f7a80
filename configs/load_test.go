package configs

import (
	"strings"
	"testing"
)

// TestLoadGood: configurations that must load (SPEC C1, C2, I1, L2).
func TestLoadGood(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f     func(t *testing.T) fixture
		check func(t *testing.T, s *Snapshot)
	}{
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
		{name: "Q3 quota policy with the counter store from the environment (not served yet: its checks)", f: func(t *testing.T) fixture {
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
	} {
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

// TestLoadRefused is seed 002 "Refused at load" (SPEC C3), every item, and the
// listener's, upstreams' and stores' own checks: each row must be refused
// with every wanted substring in the report.
func TestLoadRefused(t *testing.T) {
	plainOnly := func(f fixture, t *testing.T) fixture {
		return f.apply(t,
			edit{"asyncapi", "      - $ref: \"#/components/securitySchemes/ordersWrite\"\n", ""},
			edit{"asyncapi", "      - $ref: \"#/components/securitySchemes/ordersRead\"\n", ""})
	}
	for _, tc := range []struct {
		name string
		f    func(t *testing.T) fixture
		want []string
	}{
		// ---- seed 002 "Refused at load" ----
		{"C3 x-flexway-kafka-proxy without listeners.kafka", func(t *testing.T) fixture {
			f := base()
			f.flexway = f.flexway[:strings.Index(f.flexway, "listeners:")]
			return f
		}, []string{"asyncapi.yaml:15: operations.produceOrders.x-flexway-kafka-proxy: served to Kafka clients, but flexway.yaml declares no listeners.kafka"}},
		{"C3 listeners.kafka without any x-flexway-kafka-proxy operation", func(t *testing.T) fixture {
			return base().apply(t,
				edit{"asyncapi", "    x-flexway-kafka-proxy: { cluster: shop, transactions: true }\n", ""},
				edit{"asyncapi", "    x-flexway-kafka-proxy: { cluster: shop, admin_scope: \"orders:admin\" }\n", ""})
		}, []string{"flexway.yaml:18: listeners.kafka: declared, and no operation of the contract is served to Kafka clients"}},
		{"C3 a cluster name that is not a DNS label", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", "{ cluster: shop, transactions: true }", "{ cluster: Shop_EU, transactions: true }"})
		}, []string{`asyncapi.yaml:15: operations.produceOrders.x-flexway-kafka-proxy.cluster: "Shop_EU" is not a DNS label`}},
		{"C3 a served operation without security", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", "    security:\n      - $ref: \"#/components/securitySchemes/apiKey\"\n      - $ref: \"#/components/securitySchemes/ordersWrite\"\n", ""})
		}, []string{"asyncapi.yaml:11: operations.produceOrders.security: required"}},
		{"C3 a served operation with an empty security list", func(t *testing.T) fixture {
			return plainOnly(base(), t).apply(t, edit{"asyncapi", "    security:\n      - $ref: \"#/components/securitySchemes/apiKey\"\n  consumeOrders", "    security: []\n  consumeOrders"})
		}, []string{"operations.produceOrders.security: required"}},
		{"C3 a public operation (empty alternative)", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", "      - $ref: \"#/components/securitySchemes/ordersWrite\"\n", "      - {}\n"})
		}, []string{"asyncapi.yaml:18: operations.produceOrders.security[1]: an empty alternative makes the operation public"}},
		{"C3 x-flexway-validation: full", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", "    x-flexway-upstream: events\n", "    x-flexway-upstream: events\n    x-flexway-validation: full\n"})
		}, []string{"operations.produceOrders.x-flexway-validation: full validation decodes every record"}},
		{"C3 transactions on a receive operation", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", `{ cluster: shop, admin_scope: "orders:admin" }`, `{ cluster: shop, admin_scope: "orders:admin", transactions: true }`})
		}, []string{"operations.consumeOrders.x-flexway-kafka-proxy.transactions: transactions open the transactional producer: a send operation's"}},
		{"C3 an address without the tenant", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", `"{tenant}.orders"`, `"acme.orders"`})
		}, []string{`asyncapi.yaml:5: channels.orders.address: "acme.orders" is not "<prefix>{tenant}.orders"`}},
		{"C3 an address whose name is not the channel's key", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", `"{tenant}.orders"`, `"{tenant}.commandes"`})
		}, []string{`channels.orders.address: "{tenant}.commandes" is not "<prefix>{tenant}.orders"`}},
		{"C3 an address with two parameters", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", `"{tenant}.orders"`, `"{region}.{tenant}.orders"`})
		}, []string{`channels.orders.address: "{region}.{tenant}.orders" is not`}},
		{"C3 a prefix not ending with a dot", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", `"{tenant}.orders"`, `"prod-{tenant}.orders"`})
		}, []string{`channels.orders.address: prefix "prod-": empty, or topic-name characters ending with '.'`}},
		{"C3 the address parameter not bound to the tenant", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", "tenant: { x-flexway-bind: tenant }", "tenant: { description: who }"})
		}, []string{"asyncapi.yaml:7: channels.orders.parameters.tenant: x-flexway-bind: tenant required"}},
		{"C3 the address parameter not declared", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", "    parameters:\n      tenant: { x-flexway-bind: tenant }\n", ""})
		}, []string{"channels.orders.parameters: required: parameter tenant with x-flexway-bind: tenant"}},
		{"C3 a channel key that is not a topic name", func(t *testing.T) fixture {
			return base().apply(t,
				edit{"asyncapi", "  orders:\n    address: \"{tenant}.orders\"", "  orders!:\n    address: \"{tenant}.orders!\""},
				edit{"asyncapi", `{ $ref: "#/channels/orders" }`, `{ $ref: "#/channels/orders!" }`})
		}, []string{`asyncapi.yaml:4: channels.orders!: the channel's key is the topic name clients see, and "orders!" holds '!'`}},
		{"C3 a channel key starting with __", func(t *testing.T) fixture {
			return base().apply(t,
				edit{"asyncapi", "  orders:\n    address: \"{tenant}.orders\"", "  __orders:\n    address: \"{tenant}.__orders\""},
				edit{"asyncapi", `{ $ref: "#/channels/orders" }`, `{ $ref: "#/channels/__orders" }`})
		}, []string{`channels.__orders: the channel's key is the topic name clients see, and "__orders" starts with __`}},
		{"C3 a channel key longer than 249", func(t *testing.T) fixture {
			long := strings.Repeat("o", 250)
			return base().apply(t,
				edit{"asyncapi", "  orders:\n    address: \"{tenant}.orders\"", "  " + long + ":\n    address: \"{tenant}." + long + "\""},
				edit{"asyncapi", `{ $ref: "#/channels/orders" }`, `{ $ref: "#/channels/` + long + `" }`})
		}, []string{"longer than 249 characters"}},
		{"C3 two prefixes on one upstream", func(t *testing.T) fixture {
			return base().apply(t,
				edit{"asyncapi", "operations:\n", "  invoices:\n    address: \"billing.{tenant}.invoices\"\n    parameters: { tenant: { x-flexway-bind: tenant } }\noperations:\n"},
				edit{"asyncapi", "components:\n", "  produceInvoices:\n    action: send\n    channel: { $ref: \"#/channels/invoices\" }\n    x-flexway-upstream: events\n    x-flexway-kafka-proxy: { cluster: shop }\n    security: [{ type: plain }]\ncomponents:\n"})
		}, []string{`asyncapi.yaml:11: channels.invoices.address: prefix "billing.", but upstream "events" serves channel "orders" under prefix "": one prefix per upstream`}},
		{"C3 two prefixes on two upstreams that share a broker", func(t *testing.T) fixture {
			return base().apply(t,
				edit{"flexway", "auth:\n", "  events-alias:\n    protocol: kafka\n    brokers: [other-0:9093, KAFKA-1.kafka:9093]\nauth:\n"},
				edit{"asyncapi", "operations:\n", "  invoices:\n    address: \"billing.{tenant}.invoices\"\n    parameters: { tenant: { x-flexway-bind: tenant } }\noperations:\n"},
				edit{"asyncapi", "components:\n", "  produceInvoices:\n    action: send\n    channel: { $ref: \"#/channels/invoices\" }\n    x-flexway-upstream: events-alias\n    x-flexway-kafka-proxy: { cluster: billing }\n    security: [{ type: plain }]\ncomponents:\n"},
				edit{"flexway", "        shop:", "        billing: { ports: { from: 20092, to: 20095 } }\n        shop:"})
		}, []string{`flexway.yaml:11: upstreams.events-alias.brokers[1]: "KAFKA-1.kafka:9093" is a broker of upstream "events" too`}},
		{"C3 two channels whose names Kafka confuses", func(t *testing.T) fixture {
			return base().apply(t,
				edit{"asyncapi", "operations:\n", "  orders.eu:\n    address: \"{tenant}.orders.eu\"\n    parameters: { tenant: { x-flexway-bind: tenant } }\n  orders_eu:\n    address: \"{tenant}.orders_eu\"\n    parameters: { tenant: { x-flexway-bind: tenant } }\noperations:\n"},
				edit{"asyncapi", "components:\n", "  a:\n    action: send\n    channel: { $ref: \"#/channels/orders.eu\" }\n    x-flexway-upstream: events\n    x-flexway-kafka-proxy: { cluster: shop }\n    security: [{ type: plain }]\n  b:\n    action: send\n    channel: { $ref: \"#/channels/orders_eu\" }\n    x-flexway-upstream: events\n    x-flexway-kafka-proxy: { cluster: shop }\n    security: [{ type: plain }]\ncomponents:\n"})
		}, []string{`asyncapi.yaml:13: channels.orders_eu: Kafka confuses "orders_eu" with channel "orders.eu"`}},
		{"C3 a cluster on two upstreams", func(t *testing.T) fixture {
			return base().apply(t,
				edit{"flexway", "auth:\n", "  other:\n    protocol: kafka\n    brokers: [other-0:9092]\nauth:\n"},
				edit{"asyncapi", "    x-flexway-upstream: events\n    x-flexway-kafka-proxy: { cluster: shop, transactions: true }", "    x-flexway-upstream: other\n    x-flexway-kafka-proxy: { cluster: shop, transactions: true }"})
		}, []string{`asyncapi.yaml:14: operations.produceOrders.x-flexway-upstream: cluster "shop" is served by upstream "events" already`}},
		{"C3 a token admitted without auth.issuers", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "  issuers:\n    - name: customers\n      discovery: https://login.example.net/.well-known/openid-configuration\n      audience: kafka\n      tenant_claim: org\n", ""})
		}, []string{`asyncapi.yaml:18: operations.produceOrders.security[1]: scheme "ordersWrite" admits tokens, and flexway.yaml declares no auth.issuers`,
			`asyncapi.yaml:26: operations.consumeOrders.security[1]: scheme "ordersRead" admits tokens`}},
		{"C3 a key admitted without auth.api_keys", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "  api_keys:\n    store: \"file:./api-keys.yaml\"\n", ""})
		}, []string{`asyncapi.yaml:17: operations.produceOrders.security[0]: scheme "apiKey" admits API keys, and flexway.yaml declares no auth.api_keys`}},
		{"C3 a certificate admitted without client_ca_file", func(t *testing.T) fixture {
			return base().withTLS().apply(t,
				edit{"flexway", "      client_ca_file: ca.crt\n", ""},
				edit{"asyncapi", "      - $ref: \"#/components/securitySchemes/ordersRead\"\n", "      - { type: X509 }\n"})
		}, []string{"operations.consumeOrders.security[1]: an inline scheme admits client certificates, and flexway.yaml declares no listeners.kafka.tls.client_ca_file"}},
		{"C3 mtls clients without client_ca_file", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "listeners:\n", "  mtls:\n    clients:\n      - { id: billing, subject: \"CN=billing-app\", tenant: acme, operations: [consumeOrders] }\nlisteners:\n"})
		}, []string{"flexway.yaml:18: auth.mtls.clients: client certificates are verified by listeners.kafka.tls.client_ca_file"}},
		{"C3 fallback ports of a cluster the contract does not declare", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "        shop:", "        lab: { ports: { from: 20092, to: 20095 } }\n        shop:"})
		}, []string{`flexway.yaml:23: listeners.kafka.plaintext.clusters.lab: fallback ports of cluster "lab", which the contract does not declare`}},
		{"C3 an operation naming an unknown upstream", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", "    x-flexway-upstream: events\n    x-flexway-kafka-proxy: { cluster: shop, transactions: true }", "    x-flexway-upstream: evnets\n    x-flexway-kafka-proxy: { cluster: shop, transactions: true }"})
		}, []string{`asyncapi.yaml:14: operations.produceOrders.x-flexway-upstream: unknown upstream "evnets" (flexway.yaml declares: events)`}},
		{"C3 an operation naming an unknown channel", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", `channel: { $ref: "#/channels/orders" }`, `channel: { $ref: "#/channels/order" }`})
		}, []string{`operations.produceOrders.channel.$ref: unknown channel "order"`}},
		{"C3 an operation naming an unknown security scheme", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", `$ref: "#/components/securitySchemes/ordersWrite"`, `$ref: "#/components/securitySchemes/ordersWrites"`})
		}, []string{`operations.produceOrders.security[1]: unknown security scheme "ordersWrites"`}},
		{"C3 an operation without x-flexway-upstream, cluster, action", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", "    action: send\n    channel: { $ref: \"#/channels/orders\" }\n    x-flexway-upstream: events\n    x-flexway-kafka-proxy: { cluster: shop, transactions: true }\n",
				"    action: publish\n    channel: { $ref: \"#/channels/orders\" }\n    x-flexway-kafka-proxy: { transactions: true }\n"})
		}, []string{`operations.produceOrders.action: "publish" is not an action`, "operations.produceOrders.x-flexway-upstream: required", "operations.produceOrders.x-flexway-kafka-proxy.cluster: required"}},
		{"C3 an unknown key in x-flexway-kafka-proxy", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", "{ cluster: shop, transactions: true }", "{ cluster: shop, transaction: true }"})
		}, []string{"asyncapi.yaml:15: operations.produceOrders.x-flexway-kafka-proxy.transaction: unknown key"}},
		{"C1 an AsyncAPI 2 contract", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", "asyncapi: 3.0.0", "asyncapi: 2.6.0"})
		}, []string{`asyncapi.yaml:1: asyncapi: "2.6.0": an AsyncAPI 3 contract is expected`}},
		{"C3 oauth2 without scopes", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", `      scopes: ["orders:write"]`, ``})
		}, []string{`operations.produceOrders.security[1]: scheme "ordersWrite": oauth2 without scopes would admit every token`}},
		{"C3 AsyncAPI 2 style security requirement", func(t *testing.T) fixture {
			return base().apply(t, edit{"asyncapi", "      - $ref: \"#/components/securitySchemes/ordersWrite\"\n", "      - ordersWrite: [\"orders:write\"]\n"})
		}, []string{"operations.produceOrders.security[1]: neither a $ref to #/components/securitySchemes/ nor a scheme with a type"}},

		// ---- listeners.kafka (seed 001 "L'écouteur TLS", "Le repli en clair"; SPEC L1-L3) ----
		{"L2 plaintext without mesh_only: true", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "      mesh_only: true\n", "      mesh_only: false\n"})
		}, []string{"flexway.yaml:20: listeners.kafka.plaintext.mesh_only: clear text is refused without mesh_only: true"}},
		{"L2 a bind_host that is no host", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "      mesh_only: true\n", "      mesh_only: true\n      bind_host: \"not a host\"\n"})
		}, []string{`flexway.yaml:21: listeners.kafka.plaintext.bind_host: "not a host" is neither an IP address nor a host name`}},
		{"L2 from not below to", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "from: 19092, to: 19095", "from: 19095, to: 19095"})
		}, []string{"listeners.kafka.plaintext.clusters.shop.ports: from 19095 must be below to 19095"}},
		{"L2 ports outside 1..65535", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "from: 19092, to: 19095", "from: 0, to: 70000"})
		}, []string{"listeners.kafka.plaintext.clusters.shop.ports.from: 0 is outside 1..65535", "listeners.kafka.plaintext.clusters.shop.ports.to: 70000 is outside 1..65535"}},
		{"L2 overlapping ranges of two clusters", func(t *testing.T) fixture {
			return base().apply(t,
				edit{"flexway", "        shop:", "        lab: { ports: { from: 19090, to: 19093 } }\n        shop:"},
				edit{"asyncapi", "{ cluster: shop, transactions: true }", "{ cluster: lab, transactions: true }"},
				edit{"flexway", "auth:\n", "  other:\n    protocol: kafka\n    brokers: [other-0:9092]\nauth:\n"},
				edit{"asyncapi", "    x-flexway-upstream: events\n    x-flexway-kafka-proxy: { cluster: lab", "    x-flexway-upstream: other\n    x-flexway-kafka-proxy: { cluster: lab"})
		}, []string{"listeners.kafka.plaintext.clusters.shop.ports: 19092..19095 overlaps lab's 19090..19093"}},
		{"L2 a served cluster without fallback ports and no TLS", func(t *testing.T) fixture {
			return base().apply(t,
				edit{"asyncapi", "{ cluster: shop, transactions: true }", "{ cluster: lab, transactions: true }"},
				edit{"flexway", "auth:\n", "  other:\n    protocol: kafka\n    brokers: [other-0:9092]\nauth:\n"},
				edit{"asyncapi", "    x-flexway-upstream: events\n    x-flexway-kafka-proxy: { cluster: lab", "    x-flexway-upstream: other\n    x-flexway-kafka-proxy: { cluster: lab"})
		}, []string{`listeners.kafka.plaintext.clusters: cluster "lab" has no fallback ports, and there is no TLS listener`}},
		{"L1 neither tls nor plaintext", func(t *testing.T) fixture {
			f := base()
			f.flexway = f.flexway[:strings.Index(f.flexway, "listeners:")] + "listeners:\n  kafka:\n    max_connections: 100\n"
			return f
		}, []string{"flexway.yaml:18: listeners.kafka: declares neither tls nor plaintext"}},
		{"L1 tls without sni_domain, cert_file, key_file", func(t *testing.T) fixture {
			return base().withTLS().apply(t,
				edit{"flexway", "    sni_domain: kafka.example.com\n", ""},
				edit{"flexway", "      cert_file: tls.crt\n      key_file: tls.key\n", ""})
		}, []string{"listeners.kafka.sni_domain: required with tls", "listeners.kafka.tls.cert_file: required", "listeners.kafka.tls.key_file: required"}},
		{"L1 tls files that are not a certificate and key", func(t *testing.T) fixture {
			f := base().withTLS().apply(t, edit{"flexway", "key_file: tls.key", "key_file: other.key"})
			f.extra = map[string]string{"other.key": "not a key\n"}
			return f
		}, []string{"listeners.kafka.tls.cert_file:", "other.key"}},
		{"L1 a client CA file without certificates", func(t *testing.T) fixture {
			f := base().withTLS().apply(t, edit{"flexway", "client_ca_file: ca.crt", "client_ca_file: empty.crt"})
			f.extra = map[string]string{"empty.crt": "nothing\n"}
			return f
		}, []string{"listeners.kafka.tls.client_ca_file:", "holds no PEM certificate"}},
		{"L1 TLS-only keys without tls", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "  kafka:\n", "  kafka:\n    sni_domain: kafka.example.com\n"})
		}, []string{"listeners.kafka.sni_domain: belongs to the TLS listener"}},

		// ---- bounds (seed 002 "Listener bounds", "Sessions"; SPEC L3, S3, B1, B2, Q1) ----
		{"S3 max_session_lifetime outside 1m..24h", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "  kafka:\n", "  kafka:\n    max_session_lifetime: 30s\n"})
		}, []string{"flexway.yaml:19: listeners.kafka.max_session_lifetime: 30s is outside 1m..24h"}},
		{"S3 max_session_lifetime above 24h", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "  kafka:\n", "  kafka:\n    max_session_lifetime: 25h\n"})
		}, []string{"listeners.kafka.max_session_lifetime: 25h is outside 1m..24h"}},
		{"U4 server.shutdown_timeout outside 1s..10m", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "auth:\n", "server:\n  shutdown_timeout: 500ms\nauth:\n"})
		}, []string{"server.shutdown_timeout: 500ms is outside 1s..10m"}},
		{"Q1 window and max_throttle outside their ranges", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "  kafka:\n", "  kafka:\n    quotas: { window: 50ms, max_throttle: 31s }\n"})
		}, []string{"listeners.kafka.quotas.window: 50ms is outside 100ms..10s", "listeners.kafka.quotas.max_throttle: 31s is outside 100ms..30s"}},
		{"B2 max_tenant_in_flight_bytes outside max_in_flight_bytes..max_total_in_flight_bytes", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "  kafka:\n", "  kafka:\n    max_tenant_in_flight_bytes: 32MiB\n"})
		}, []string{"listeners.kafka.max_tenant_in_flight_bytes: 32MiB is outside max_in_flight_bytes..max_total_in_flight_bytes (64MiB..1GiB)"}},
		{"B2 max_total_in_flight_bytes below max_in_flight_bytes", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "  kafka:\n", "  kafka:\n    max_total_in_flight_bytes: 32MiB\n"})
		}, []string{"listeners.kafka.max_total_in_flight_bytes: 32MiB is below max_in_flight_bytes 64MiB"}},
		{"B2 on_tenant_budget_exceeded neither wait nor close", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "  kafka:\n", "  kafka:\n    on_tenant_budget_exceeded: drop\n"})
		}, []string{`listeners.kafka.on_tenant_budget_exceeded: "drop" is not a choice: wait or close`}},
		{"B1 negative and zero connection bounds", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "  kafka:\n", "  kafka:\n    max_connections_per_ip: -1\n    max_unauthenticated_connections: 0\n"})
		}, []string{"listeners.kafka.max_connections_per_ip: -1 is negative", "listeners.kafka.max_unauthenticated_connections: 0 would refuse every connection"}},
		{"L3 max_request_bytes below 64KiB", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "  kafka:\n", "  kafka:\n    max_request_bytes: 1KiB\n"})
		}, []string{"listeners.kafka.max_request_bytes: 1KiB is outside 64KiB..2GiB-1"}},
		{"O3 audit.decisions neither refusals nor all", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "version: 1\n", "version: 1\naudit: { decisions: some, topic_key: 0123456789abcdef }\n"})
		}, []string{`flexway.yaml:2: audit.decisions: "some" is not a choice: refusals or all`}},
		{"O3 audit.topic_key too short, never echoed", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "version: 1\n", "version: 1\naudit: { topic_key: s3cr3t }\n"})
		}, []string{`flexway.yaml:2: audit.topic_key: 6 bytes: 16 at least`}},
		{"O3 audit.topic_key from a file that is not there", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "version: 1\n", "version: 1\naudit: { topic_key: \"file:./no-audit.key\" }\n"})
		}, []string{`audit.topic_key: cannot read the secret's file`}},
		{"version must be 1", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "version: 1\n", "version: 2\n"})
		}, []string{"flexway.yaml:1: version: 2 is not a known version: 1 is the only one"}},
		{"version is required", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "version: 1\n", ""})
		}, []string{"flexway.yaml: version: required"}},
		{"O1 budget_wait_buckets not increasing (not served yet: its checks)", func(t *testing.T) fixture {
			return base().unbuilt().apply(t, edit{"flexway", "version: 1\n", "version: 1\nobservability: { kafka: { budget_wait_buckets: [1ms, 10ms, 5ms] } }\n"})
		}, []string{"observability.kafka.budget_wait_buckets[2]: 5ms: the bounds must increase"}},

		// ---- upstreams (seed 001 "Les amonts"; SPEC U1) ----
		{"U1 protocol other than kafka", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "    protocol: kafka\n", "    protocol: amqp\n"})
		}, []string{`flexway.yaml:6: upstreams.events.protocol: "amqp" is not served here`}},
		{"U1 no brokers", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "    brokers: [kafka-0.kafka:9093, kafka-1.kafka:9093, kafka-2.kafka:9093]\n", ""})
		}, []string{"upstreams.events.brokers: required: at least one broker address"}},
		{"U1 brokers and embedded", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "    timeout: 5s\n", "    timeout: 5s\n    embedded: { brokers: 3 }\n"})
		}, []string{"upstreams.events.embedded: an embedded upstream runs its own brokers"}},
		{"U1 a broker that is not host:port", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "kafka-2.kafka:9093]", "kafka-2.kafka]"})
		}, []string{`upstreams.events.brokers[2]: "kafka-2.kafka": not host:port`}},
		{"U1 an unknown SASL mechanism", func(t *testing.T) fixture {
			return base().withUpstreamAuth().apply(t, edit{"flexway", "mechanism: SCRAM-SHA-512", "mechanism: GSSAPI"})
		}, []string{`upstreams.events.sasl.mechanism: "GSSAPI" is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512`}},
		{"U1 a password file that cannot be read", func(t *testing.T) fixture {
			return base().withUpstreamAuth().apply(t, edit{"flexway", "file:./kafka-password", "file:./missing-password"})
		}, []string{"upstreams.events.sasl.password: cannot read the secret's file", "missing-password: no such file or directory"}},
		{"U1 tls and sasl towards the embedded upstream", func(t *testing.T) fixture {
			return base().withUpstreamAuth().apply(t,
				edit{"flexway", "    brokers: [kafka-0.kafka:9093, kafka-1.kafka:9093, kafka-2.kafka:9093]\n", "    embedded: { brokers: 1 }\n"})
		}, []string{"upstreams.events.tls: the embedded upstream is reached in clear text", "upstreams.events.sasl: the embedded upstream asks no SASL"}},

		// ---- quotas (seed 001 "Quotas"; SPEC Q3), not served yet: their checks ----
		{"Q3 quotas.quota naming no policy", func(t *testing.T) fixture {
			return base().unbuilt().apply(t, edit{"flexway", "  kafka:\n", "  kafka:\n    quotas: { quota: plans }\n"})
		}, []string{`listeners.kafka.quotas.quota: "plans" names no policies.definitions entry`, "server.counters.store is required"}},
		{"Q3 quotas.quota naming a policy of another type, without counters", func(t *testing.T) fixture {
			return base().unbuilt().apply(t, edit{"flexway", "listeners:\n  kafka:\n", "policies:\n  definitions:\n    plans: { type: rate }\nlisteners:\n  kafka:\n    quotas: { quota: plans }\n"})
		}, []string{`policies.definitions.plans.type: "rate" is not a policy the Kafka listener applies`, `listeners.kafka.quotas.quota: "plans" is a policy of type "rate", not quota`, "server.counters.store is required"}},
		{"Q3 a quota policy's limits: missing, not positive, unknown window", func(t *testing.T) fixture {
			return base().unbuilt().apply(t, edit{"flexway", "listeners:\n  kafka:\n", "policies:\n  definitions:\n    none: { type: quota }\n    zero: { type: quota, config: { limits: { day: -1, month: -5 } } }\n    hourly: { type: quota, config: { limits: { hour: 10 } } }\nlisteners:\n  kafka:\n"})
		}, []string{"policies.definitions.none.config.limits: required", "policies.definitions.zero.config.limits.day: -1: a positive number", "policies.definitions.zero.config.limits.month: -5: a positive number", "hour"}},
		{"Q3 counters store from an unset variable", func(t *testing.T) fixture {
			return base().unbuilt().apply(t, edit{"flexway", "version: 1\n", "version: 1\nserver: { counters: { store: \"${FLEXWAY_TEST_UNSET_COUNTERS}\" } }\n"})
		}, []string{"server.counters.store: the environment does not set ${FLEXWAY_TEST_UNSET_COUNTERS}"}},

		// ---- auth and the key store (SPEC I1-I3) ----
		{"I2 an issuer without discovery nor jwks, audience, tenant_claim", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "      discovery: https://login.example.net/.well-known/openid-configuration\n      audience: kafka\n      tenant_claim: org\n", ""})
		}, []string{"auth.issuers[0]: required: discovery", "auth.issuers[0].audience: required", "auth.issuers[0].tenant_claim: required"}},
		{"I2 a discovery URL in clear", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "https://login.example.net", "http://login.example.net"})
		}, []string{"auth.issuers[0].discovery:", "keys are fetched over https"}},
		{"I1 api_keys.store not file:", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", `store: "file:./api-keys.yaml"`, `store: "./api-keys.yaml"`})
		}, []string{`auth.api_keys.store: required: "file:PATH"`}},
		{"I1 duplicate ids, bad hash, unknown operation, bad expiry", func(t *testing.T) fixture {
			return base().apply(t,
				edit{"keys", "id: acme-orders-reader", "id: acme-orders-producer"},
				edit{"keys", "hash: \"" + testKeyHash + "\"\n    tenant: acme\n    operations: [produceOrders]", "hash: \"sha256:abc\"\n    tenant: acme\n    operations: [produceOrder]"},
				edit{"keys", "2027-06-30T00:00:00Z", "30/06/2027"})
		}, []string{
			`api-keys.yaml:3: keys[0].hash: "sha256:" followed by 64 hex digits expected`,
			`api-keys.yaml:5: keys[0].operations[0]: unknown operation "produceOrder": the contract serves consumeOrders, produceOrders to Kafka clients`,
			`api-keys.yaml:6: keys[0].expires_at: "30/06/2027" is not an RFC 3339 time`,
			`api-keys.yaml:7: keys[1].id: "acme-orders-producer" names another key too`,
		}},
		{"I1 a key without operations", func(t *testing.T) fixture {
			return base().apply(t, edit{"keys", "    operations: [consumeOrders]\n", ""})
		}, []string{"keys[1].operations: required: the operations it opens"}},
		{"I1 an unknown key in the store", func(t *testing.T) fixture {
			return base().apply(t, edit{"keys", "    tenant: acme\n    operations: [consumeOrders]", "    tenant: acme\n    scopes: [x]\n    operations: [consumeOrders]"})
		}, []string{"api-keys.yaml:10: keys[1].scopes: unknown key"}},
		{"I3 an mtls client bound to an unknown operation", func(t *testing.T) fixture {
			return base().withTLS().apply(t, edit{"flexway", "listeners:\n", "  mtls:\n    clients:\n      - { id: billing, subject: \"CN=billing-app\", tenant: acme, operations: [consume] }\nlisteners:\n"})
		}, []string{`auth.mtls.clients[0].operations[0]: unknown operation "consume"`}},

		// ---- strict decoding: unknown keys and mistyped values, with their lines ----
		{"unknown key with a suggestion", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "      mesh_only: true\n", "      mesh_only: true\n      mesh_onyl: true\n"})
		}, []string{"flexway.yaml:21: listeners.kafka.plaintext.mesh_onyl: unknown key (did you mean mesh_only?)"}},
		{"a mistyped value", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "first_node_id: 0", "first_node_id: zero"})
		}, []string{"flexway.yaml:23: listeners.kafka.plaintext.clusters.shop.first_node_id: expected an integer, found a string"}},
		{"a duration without unit", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "    timeout: 5s\n", "    timeout: 5\n"})
		}, []string{"flexway.yaml:8: upstreams.events.timeout: 5 is not a duration"}},
		{"a YAML syntax error", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "brokers: [kafka-0.kafka:9093,", "brokers: [[kafka-0.kafka:9093,"})
		}, []string{"flexway.yaml:"}},
		{"a missing contract", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "./asyncapi.yaml", "./missing.yaml"})
		}, []string{"flexway.yaml:3: contracts.asyncapi: cannot read", "missing.yaml: no such file or directory"}},
	} {
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
