package testkit

import (
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/flexway/flexway/configs"
)

// TwoUpstreamsContract is an AsyncAPI contract of two virtual clusters on
// two upstreams: shop on upstream a (channel orders at "{tenant}.orders",
// no prefix) and bank on upstream b (channel ledger at
// "b.{tenant}.ledger": prefix "b."), each produced to by API keys
// (produceOrders, produceLedger). The U3 tests put a and b on one physical
// cluster, or on two.
const TwoUpstreamsContract = `asyncapi: 3.0.0
info: { title: Two upstreams, version: "1.0.0" }
channels:
  orders:
    address: "{tenant}.orders"
    parameters:
      tenant: { x-flexway-bind: tenant }
  ledger:
    address: "b.{tenant}.ledger"
    parameters:
      tenant: { x-flexway-bind: tenant }
operations:
  produceOrders:
    action: send
    channel: { $ref: "#/channels/orders" }
    x-flexway-upstream: a
    x-flexway-kafka-proxy: { cluster: shop }
    security: [ { $ref: "#/components/securitySchemes/apiKey" } ]
  produceLedger:
    action: send
    channel: { $ref: "#/channels/ledger" }
    x-flexway-upstream: b
    x-flexway-kafka-proxy: { cluster: bank }
    security: [ { $ref: "#/components/securitySchemes/apiKey" } ]
components:
  securitySchemes:
    apiKey: { type: plain }
`

// WriteTwoUpstreams writes into dir flexway.yaml, asyncapi.yaml
// (TwoUpstreamsContract) and api-keys.yaml: upstreams a and b reach the
// brokers brokersA and brokersB (one address each); listener is the lines
// under listeners.kafka (4 spaces of indent, e.g. TwoUpstreamsPlaintext's).
// The store's one key, acme-app of tenant acme, may use both operations;
// its secret is returned.
func WriteTwoUpstreams(t testing.TB, dir, brokersA, brokersB, listener string) (key string) {
	t.Helper()
	key = hex.EncodeToString([]byte("two-upstreams-test-key"))
	h := configs.HashKey(key)
	WriteFile(t, dir, "api-keys.yaml", []byte(fmt.Sprintf(
		"keys:\n  - id: acme-app\n    hash: \"sha256:%x\"\n    tenant: acme\n    operations: [produceOrders, produceLedger]\n", h[:])))
	WriteFile(t, dir, "asyncapi.yaml", []byte(TwoUpstreamsContract))
	WriteFile(t, dir, "flexway.yaml", []byte(fmt.Sprintf(`version: 1
contracts:
  asyncapi: ./asyncapi.yaml
upstreams:
  a: { protocol: kafka, brokers: [%q] }
  b: { protocol: kafka, brokers: [%q] }
auth:
  api_keys:
    store: "file:./api-keys.yaml"
listeners:
  kafka:
%s`, brokersA, brokersB, listener)))
	return key
}

// TwoUpstreamsPlaintext is the listener lines of WriteTwoUpstreams that
// serve shop on the plaintext ports base (its bootstrap) and base+1, bank
// on base+2 and base+3 (node 0 each), on 127.0.0.1.
func TwoUpstreamsPlaintext(base int) string {
	return fmt.Sprintf(`    plaintext:
      mesh_only: true
      bind_host: 127.0.0.1
      advertised_host: 127.0.0.1
      clusters:
        shop: { ports: { from: %d, to: %d }, first_node_id: 0 }
        bank: { ports: { from: %d, to: %d }, first_node_id: 0 }
`, base, base+1, base+2, base+3)
}
