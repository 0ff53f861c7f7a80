package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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

func TestAdminE2E(t *testing.T) {
	oe := newAdminEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := oe.adminClient("orders:read orders:admin")
	set := func(name, value string) []kadm.AlterConfig {
		return []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: kmsgStr(value)}}
	}
	alterOne := func(cl *kadm.Client, topic string, cfg []kadm.AlterConfig) error {
		t.Helper()
		rs, err := cl.AlterTopicConfigs(ctx, cfg, topic)
		if err != nil {
			return err
		}
		r, err := rs.On(topic, nil)
		if err != nil {
			t.Fatalf("AlterTopicConfigs %s: %v (%+v)", topic, err, rs)
		}
		return r.Err
	}
	createOne := func(cl *kadm.Client, partitions int32, cfg map[string]*string, topic string) error {
		t.Helper()
		rs, err := cl.CreateTopics(ctx, partitions, 1, cfg, topic)
		if err != nil {
			return err
		}
		r, ok := rs[topic]
		if !ok || len(rs) != 1 {
			t.Fatalf("CreateTopics %s: %+v", topic, rs)
		}
		return r.Err
	}
	events, orders := oe.phys("acme", "events"), oe.phys("acme", "orders")

	t.Run("create topic", func(t *testing.T) {
		wantErr(t, "too many partitions", createOne(admin, adminMaxPartitions+1, nil, "events"), kerr.PolicyViolation)
		wantErr(t, "unclean.leader.election.enable", createOne(admin, 2, map[string]*string{"unclean.leader.election.enable": kmsgStr("true")}, "events"), kerr.PolicyViolation)
		wantErr(t, "retention.ms=-1", createOne(admin, 2, map[string]*string{"retention.ms": kmsgStr("-1")}, "events"), kerr.PolicyViolation)
		wantErr(t, "undeclared topic", createOne(admin, 1, nil, "audit"), kerr.TopicAuthorizationFailed)
		wantErr(t, "another tenant's name", createOne(admin, 1, nil, "globex.events"), kerr.TopicAuthorizationFailed)
		wantErr(t, "create events", createOne(admin, 2, map[string]*string{"retention.ms": kmsgStr("604800000")}, "events"), nil)
		// The broker holds the physical name, with the configuration.
		topics, err := directAdmin(oe.testEnv).ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !topics.Has(events) || topics.Has("events") {
			t.Fatalf("broker topics %v: want %s", topics.Names(), events)
		}
		if got := len(topics[events].Partitions); got != 2 {
			t.Fatalf("%s has %d partitions", events, got)
		}
		wantBrokerConfig(t, oe.testEnv, events, "retention.ms", "604800000")
	})

	t.Run("alter configs", func(t *testing.T) {
		wantErr(t, "retention.ms=604800000", alterOne(admin, "orders", set("retention.ms", "604800000")), nil)
		wantBrokerConfig(t, oe.testEnv, orders, "retention.ms", "604800000")
		// The seed's kafka-configs example: -1 refused, the value in force stays.
		wantErr(t, "retention.ms=-1", alterOne(admin, "orders", set("retention.ms", "-1")), kerr.PolicyViolation)
		wantErr(t, "unclean.leader.election.enable", alterOne(admin, "orders", set("unclean.leader.election.enable", "true")), kerr.PolicyViolation)
		wantErr(t, "min.insync.replicas", alterOne(admin, "orders", set("min.insync.replicas", "1")), kerr.PolicyViolation)
		wantBrokerConfig(t, oe.testEnv, orders, "retention.ms", "604800000")
		wantErr(t, "cleanup.policy", alterOne(admin, "orders", set("cleanup.policy", "delete,compact")), nil)
		wantBrokerConfig(t, oe.testEnv, orders, "cleanup.policy", "compact,delete")
		wantErr(t, "delete cleanup.policy", alterOne(admin, "orders", []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "cleanup.policy"}}), nil)
		wantErr(t, "undeclared topic", alterOne(admin, "audit", set("retention.ms", "604800000")), kerr.TopicAuthorizationFailed)
		// Never a broker resource.
		rs, err := admin.AlterBrokerConfigs(ctx, set("log.retention.ms", "-1"))
		if err == nil && len(rs) == 1 {
			err = rs[0].Err
		}
		if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
			t.Fatalf("AlterBrokerConfigs: %+v %v", rs, err)
		}
	})

	t.Run("describe configs", func(t *testing.T) {
		wantErr(t, "retention.ms=604800000", alterOne(admin, "orders", set("retention.ms", "604800000")), nil)
		eventually(t, "DescribeTopicConfigs orders", func() error {
			rcs, err := admin.DescribeTopicConfigs(ctx, "orders")
			if err != nil {
				t.Fatal(err)
			}
			rc, err := rcs.On("orders", nil)
			if err != nil || rc.Err != nil || len(rcs) != 1 {
				t.Fatalf("DescribeTopicConfigs: %+v %v", rcs, err)
			}
			value := ""
			for _, c := range rc.Configs {
				if len(c.Synonyms) != 0 {
					t.Fatalf("%s answered with synonyms %+v", c.Key, c.Synonyms)
				}
				if c.Key == "retention.ms" {
					value = c.MaybeValue()
				}
			}
			if value != "604800000" {
				return fmt.Errorf("retention.ms answered %q", value)
			}
			return nil
		})
		// The broker itself has synonyms to hide (kadm asks for them).
		direct, err := directAdmin(oe.testEnv).DescribeTopicConfigs(ctx, orders)
		if err != nil {
			t.Fatal(err)
		}
		synonyms := 0
		for _, c := range direct[0].Configs {
			synonyms += len(c.Synonyms)
		}
		if synonyms == 0 {
			t.Fatalf("the broker answers no synonyms for %s: the check above proves nothing", orders)
		}
		// Never a broker resource (kadm returns a lone resource's error).
		brs, err := admin.DescribeBrokerConfigs(ctx)
		if err == nil && len(brs) == 1 {
			err = brs[0].Err
		}
		if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
			t.Fatalf("DescribeBrokerConfigs: %+v %v", brs, err)
		}
		for _, r := range brs {
			if len(r.Configs) != 0 {
				t.Fatalf("DescribeBrokerConfigs answered configs: %+v", r)
			}
		}
	})

	t.Run("partitions and deletion", func(t *testing.T) {
		rs, err := admin.UpdatePartitions(ctx, adminMaxPartitions+1, "events")
		if err != nil {
			t.Fatal(err)
		}
		if r, err := rs.On("events", nil); err != nil || !errors.Is(r.Err, kerr.PolicyViolation) {
			t.Fatalf("UpdatePartitions past the bound: %+v %v", rs, err)
		}
		rs, err = admin.UpdatePartitions(ctx, adminMaxPartitions, "events")
		if err != nil {
			t.Fatal(err)
		}
		if r, err := rs.On("events", nil); err != nil || r.Err != nil {
			t.Fatalf("UpdatePartitions to the bound: %+v %v", rs, err)
		}
		eventually(t, events+" on the broker", func() error {
			if topics, _ := directAdmin(oe.testEnv).ListTopics(ctx, events); len(topics[events].Partitions) != adminMaxPartitions {
				return fmt.Errorf("%d partitions", len(topics[events].Partitions))
			}
			return nil
		})
		dr, err := admin.DeleteTopics(ctx, "events")
		if err != nil {
			t.Fatal(err)
		}
		if r, err := dr.On("events", nil); err != nil || r.Err != nil {
			t.Fatalf("DeleteTopics events: %+v %v", dr, err)
		}
		dr, err = admin.DeleteTopics(ctx, "audit")
		if err != nil {
			t.Fatal(err)
		}
		if r, err := dr.On("audit", nil); err != nil || !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("DeleteTopics audit: %+v %v", dr, err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			topics, err := directAdmin(oe.testEnv).ListTopics(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !topics.Has(events) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still on the broker", events)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if topics, _ := directAdmin(oe.testEnv).ListTopics(ctx); !topics.Has(orders) || !topics.Has(oe.phys("globex", "orders")) {
			t.Fatalf("the other topics went too: %v", topics.Names())
		}
	})

	t.Run("groups", func(t *testing.T) {
		// A group of acme's, with committed offsets, through the gateway.
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 0, LeaderEpoch: -1})
		cr, err := admin.CommitOffsets(ctx, "billing", offs)
		if err != nil || cr.Error() != nil {
			t.Fatalf("commit: %v %v", err, cr.Error())
		}
		phys := oe.group("acme", "billing")
		listed := func() []string {
			gs, err := directAdmin(oe.testEnv).ListGroups(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return gs.Groups()
		}
		if !slices.Contains(listed(), phys) {
			t.Fatalf("groups on the broker %v: want %s", listed(), phys)
		}
		do, err := admin.DeleteOffsets(ctx, "billing", kadm.TopicsSet{"orders": {0: {}}, "audit": {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		if err, ok := do.Lookup("orders", 0); !ok || err != nil {
			t.Fatalf("DeleteOffsets orders: %v %v", ok, err)
		}
		if err, ok := do.Lookup("audit", 0); !ok || !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("DeleteOffsets audit: %v %v", ok, err)
		}
		dg, err := admin.DeleteGroups(ctx, "billing")
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := dg["billing"]; !ok || r.Err != nil || len(dg) != 1 {
			t.Fatalf("DeleteGroups: %+v", dg)
		}
		if slices.Contains(listed(), phys) {
			t.Fatalf("%s still on the broker", phys)
		}
	})

	// No admin_scope: a token without orders:admin, an API key.
	for _, c := range []struct {
		what string
		cl   *kadm.Client
	}{
		{"token without the admin scope", oe.adminClient("orders:read orders:write")},
		{"api key", kadm.NewClient(oe.client("acme-admin-key", kgo.RequestRetries(0)))},
	} {
		t.Run(c.what, func(t *testing.T) {
			wantErr(t, "CreateTopics", createOne(c.cl, 1, nil, "events"), kerr.TopicAuthorizationFailed)
			wantErr(t, "AlterTopicConfigs", alterOne(c.cl, "orders", set("retention.ms", "604800000")), kerr.TopicAuthorizationFailed)
			rcs, err := c.cl.DescribeTopicConfigs(ctx, "orders")
			if err == nil && len(rcs) == 1 {
				err = rcs[0].Err
			}
			if !errors.Is(err, kerr.TopicAuthorizationFailed) {
				t.Fatalf("DescribeTopicConfigs: %+v %v", rcs, err)
			}
			dr, err := c.cl.DeleteTopics(ctx, "orders")
			if err != nil {
				t.Fatal(err)
			}
			if r, err := dr.On("orders", nil); err != nil || !errors.Is(r.Err, kerr.TopicAuthorizationFailed) {
				t.Fatalf("DeleteTopics: %+v %v", dr, err)
			}
			dg, err := c.cl.DeleteGroups(ctx, "billing")
			if err != nil {
				t.Fatal(err)
			}
			if r := dg["billing"]; !errors.Is(r.Err, kerr.GroupAuthorizationFailed) {
				t.Fatalf("DeleteGroups: %+v", dg)
			}
			if topics, _ := directAdmin(oe.testEnv).ListTopics(ctx); !topics.Has(orders) || topics.Has(events) {
				t.Fatalf("broker topics %v", topics.Names())
			}
		})
	}
}

func kmsgStr(s string) *string { return &s }
