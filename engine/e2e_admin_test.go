package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bounded administration through the gateway (D8, seed 002 "Bounded
// administration"): the receive operations of orders and events declare
// admin_scope "orders:admin"; a token carrying orders:read (which admits
// them) and orders:admin administers those two topics within the bounds,
// a token without orders:admin and an API key administer nothing.

const adminContract = `asyncapi: 3.0.0
info: { title: Shop events, version: "1.0.0" }
channels:
  orders:
    address: "{tenant}.orders"
    parameters:
      tenant: { x-flexway-bind: tenant }
  events:
    address: "{tenant}.events"
    parameters:
      tenant: { x-flexway-bind: tenant }
operations:
  produceOrders:
    action: send
    channel: { $ref: "#/channels/orders" }
    x-flexway-upstream: events
    x-flexway-kafka-proxy: { cluster: shop }
    security: [ { $ref: "#/components/securitySchemes/apiKey" }, { $ref: "#/components/securitySchemes/ordersWrite" } ]
  consumeOrders:
    action: receive
    channel: { $ref: "#/channels/orders" }
    x-flexway-upstream: events
    x-flexway-kafka-proxy: { cluster: shop, admin_scope: "orders:admin" }
    security: [ { $ref: "#/components/securitySchemes/apiKey" }, { $ref: "#/components/securitySchemes/ordersRead" } ]
  consumeEvents:
    action: receive
    channel: { $ref: "#/channels/events" }
    x-flexway-upstream: events
    x-flexway-kafka-proxy: { cluster: shop, admin_scope: "orders:admin" }
    security: [ { $ref: "#/components/securitySchemes/apiKey" }, { $ref: "#/components/securitySchemes/ordersRead" } ]
components:
  securitySchemes:
    apiKey: { type: plain }
` + oauthSchemes

// adminMaxPartitions is the env's max_topic_partitions.
const adminMaxPartitions = 4

// newAdminEnv boots a gateway with adminContract; the upstream holds
// acme's and globex's orders, no events topic (created through the
// gateway by the tests).
func newAdminEnv(t *testing.T) *oauthEnv {
	t.Helper()
	ti := testkit.NewIssuer(t)
	key := testkit.NewSigningKey(t, "gw-1", jose.RS256)
	ti.Publish(key)

	base := testkit.FreePorts(t, 5)
	env, upstream, firstNode := upstreamEnv(t, "    embedded: { brokers: 3, partitions: 2, seed_topics: false }\n", true)
	store := env.keyStore([]testKey{
		{id: "acme-admin-key", tenant: "acme", ops: "produceOrders, consumeOrders, consumeEvents"},
		{id: "globex-app", tenant: "globex", ops: "produceOrders, consumeOrders"},
	}, func(_ int, id string) string { return "admin-env-key-" + id })
	writeFile(t, env.dir, "issuer-ca.crt", mustRead(t, ti.CAFile))
	cfg := shopConfig(upstream, issuerAuth(ti), fmt.Sprintf("    max_topic_partitions: %d\n", adminMaxPartitions), base, base+3, firstNode)
	snap := env.load(cfg, adminContract, store)
	if op := snap.Operations["consumeOrders"]; op == nil || op.AdminScope != "orders:admin" {
		t.Fatalf("consumeOrders: %+v", op)
	}
	e := env.start(snap)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	env.boot = fmt.Sprintf("127.0.0.1:%d", base)
	oe := &oauthEnv{testEnv: env, issuer: ti, key: key}
	if !env.real {
		env.direct = e.EmbeddedBrokers()["events"]
		// Nothing seeded: orders of both tenants, created on the broker.
		resp, err := directAdmin(env).CreateTopics(ctx, 2, 1, nil, env.phys("acme", "orders"), env.phys("globex", "orders"))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range resp.Sorted() {
			if r.Err != nil {
				t.Fatalf("create %s: %v", r.Topic, r.Err)
			}
		}
	}
	// The events topic is created through the gateway; gone at the end.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = directAdmin(env).DeleteTopics(ctx, env.phys("acme", "events"))
	})
	return oe
}

// adminToken is a token of acme carrying scope.
func (oe *oauthEnv) adminClient(scope string) *kadm.Client {
	return kadm.NewClient(oe.tokenClient(oe.token(map[string]any{"scope": scope}), kgo.RequestRetries(0)))
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
}

// eventually retries check for up to 15 s: a real broker applies an
// administration through its controller, what it describes next may lag.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wantBrokerConfig waits until the broker itself shows key=want on a physical topic.
func wantBrokerConfig(t *testing.T, env *testEnv, topic, key, want string) {
	t.Helper()
	eventually(t, topic+" on the broker", func() error {
		if v := brokerTopicConfig(t, env, topic, key); v != want {
			return fmt.Errorf("%s=%q, want %q", key, v, want)
		}
		return nil
	})
}

// brokerTopicConfig reads a configuration of a physical topic on the broker itself.
func brokerTopicConfig(t *testing.T, env *testEnv, topic, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rcs, err := directAdmin(env).DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("%s on the broker: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c.MaybeValue()
		}
	}
	return ""
}

// TestAdminE2E administers acme's topics and groups through the gateway
// with a token carrying orders:admin, within the bounds, and checks that a
// token without the admin scope and an API key administer nothing.
func TestAdminE2E(t *testing.T) {
	oe := newAdminEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := &adminE2E{
		ctx:    ctx,
		oe:     oe,
		admin:  oe.adminClient("orders:read orders:admin"),
		events: oe.phys("acme", "events"),
		orders: oe.phys("acme", "orders"),
	}
	t.Run("create topic", a.createTopic)
	t.Run("alter configs", a.alterConfigs)
	t.Run("describe configs", a.describeConfigs)
	t.Run("partitions and deletion", a.partitionsAndDeletion)
	t.Run("groups", a.groups)

	// No admin_scope: a token without orders:admin, an API key.
	for _, c := range []struct {
		what string
		cl   *kadm.Client
	}{
		{"token without the admin scope", oe.adminClient("orders:read orders:write")},
		{"api key", kadm.NewClient(oe.client("acme-admin-key", kgo.RequestRetries(0)))},
	} {
		t.Run(c.what, func(t *testing.T) { a.noAdminScope(t, c.cl) })
	}
}

func kmsgStr(s string) *string { return &s }
