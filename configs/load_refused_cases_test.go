// The rows of TestLoadRefused, by what they refuse: each row must be
// refused with every wanted substring in the report.

package configs

import (
	"strings"
	"testing"
)

// refusedCase is one configuration refused at load: the fixture it loads
// and the substrings its report must hold.
type refusedCase struct {
	name string
	f    func(t *testing.T) fixture
	want []string
}

// plainOnly leaves the contract's operations only the plain (API key)
// scheme.
func plainOnly(f fixture, t *testing.T) fixture {
	return f.apply(t,
		edit{"asyncapi", "      - $ref: \"#/components/securitySchemes/ordersWrite\"\n", ""},
		edit{"asyncapi", "      - $ref: \"#/components/securitySchemes/ordersRead\"\n", ""})
}

// refusedServedCases: seed 002 "Refused at load" (SPEC C3), first part:
// what a served operation must declare, its security, its channel's
// address and key.
func refusedServedCases() []refusedCase {
	return []refusedCase{
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
	}
}

// refusedReferenceCases: seed 002 "Refused at load" (SPEC C3), second
// part: prefixes and clusters across upstreams, what each admitted
// credential needs, names an operation refers to, and the contract's
// version and schemes.
func refusedReferenceCases() []refusedCase {
	return []refusedCase{
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
	}
}

// refusedListenerCases: listeners.kafka (seed 001 "L'écouteur TLS", "Le
// repli en clair"; SPEC L1-L3).
func refusedListenerCases() []refusedCase {
	return []refusedCase{
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
	}
}

// refusedBoundsCases: bounds (seed 002 "Listener bounds", "Sessions"; SPEC
// L3, S3, B1, B2, Q1), audit, version and observability.
func refusedBoundsCases() []refusedCase {
	return []refusedCase{
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
		{"O1 budget_wait_buckets not increasing", func(t *testing.T) fixture {
			return base().unbuilt().apply(t, edit{"flexway", "version: 1\n", "version: 1\nobservability: { kafka: { budget_wait_buckets: [1ms, 10ms, 5ms] } }\n"})
		}, []string{"observability.kafka.budget_wait_buckets[2]: 5ms: the bounds must increase"}},
		{"O1 observability.otlp without an endpoint, a ratio above 1, an unknown protocol", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "version: 1\n", "version: 1\nobservability: { otlp: { protocol: thrift, sampling_ratio: 1.5, metrics_interval: 10ms } }\n"})
		}, []string{`observability.otlp.endpoint: "": required, the collector's http:// or https:// URL`,
			`observability.otlp.protocol: "thrift": http/protobuf or grpc`, "observability.otlp.sampling_ratio: 1.5: between 0 and 1",
			"observability.otlp.metrics_interval: 10ms is outside 1s..1h"}},
		{"O1 observability.otlp endpoint not an http(s) URL", func(t *testing.T) fixture {
			return base().apply(t, edit{"flexway", "version: 1\n", "version: 1\nobservability: { otlp: { endpoint: \"collector:4317\" } }\n"})
		}, []string{`observability.otlp.endpoint: "collector:4317": required, the collector's http:// or https:// URL`}},
	}
}

// refusedUpstreamCases: upstreams (seed 001 "Les amonts"; SPEC U1), then
// quotas (seed 001 "Quotas"; SPEC Q3).
func refusedUpstreamCases() []refusedCase {
	return []refusedCase{
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

		// ---- quotas (seed 001 "Quotas"; SPEC Q3) ----
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
	}
}

// refusedAuthCases: auth and the key store (SPEC I1-I3), then strict
// decoding: unknown keys and mistyped values, with their lines.
func refusedAuthCases() []refusedCase {
	return []refusedCase{
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
	}
}
