package engine

// The steps of TestAdminE2E, each a subtest: topics created, configured,
// described, grown and deleted, and groups administered through the
// gateway by a token with the admin scope; then what a client without the
// scope is refused.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// adminE2E is what the steps of TestAdminE2E share: the gateway, a client
// of a token of acme's carrying orders:read and orders:admin, and the
// physical names of acme's events and orders.
type adminE2E struct {
	ctx            context.Context
	oe             *oauthEnv
	admin          *kadm.Client
	events, orders string
}

// setConfig is the alteration that sets name to value.
func setConfig(name, value string) []kadm.AlterConfig {
	return []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: kmsgStr(value)}}
}

// alterOne alters the configuration of one topic through cl and returns
// the topic's error.
func (a *adminE2E) alterOne(t *testing.T, cl *kadm.Client, topic string, cfg []kadm.AlterConfig) error {
	t.Helper()
	rs, err := cl.AlterTopicConfigs(a.ctx, cfg, topic)
	if err != nil {
		return err
	}
	r, err := rs.On(topic, nil)
	if err != nil {
		t.Fatalf("AlterTopicConfigs %s: %v (%+v)", topic, err, rs)
	}
	return r.Err
}

// createOne creates one topic through cl and returns the topic's error.
func (a *adminE2E) createOne(t *testing.T, cl *kadm.Client, partitions int32, cfg map[string]*string, topic string) error {
	t.Helper()
	rs, err := cl.CreateTopics(a.ctx, partitions, 1, cfg, topic)
	if err != nil {
		return err
	}
	r, ok := rs[topic]
	if !ok || len(rs) != 1 {
		t.Fatalf("CreateTopics %s: %+v", topic, rs)
	}
	return r.Err
}

// createTopic: a creation past a bound or outside the tenant's declared
// topics is refused; events within the bounds lands on the broker under
// its physical name, with its configuration.
func (a *adminE2E) createTopic(t *testing.T) {
	admin, events := a.admin, a.events
	wantErr(t, "too many partitions", a.createOne(t, admin, adminMaxPartitions+1, nil, "events"), kerr.PolicyViolation)
	wantErr(t, "unclean.leader.election.enable", a.createOne(t, admin, 2, map[string]*string{"unclean.leader.election.enable": kmsgStr("true")}, "events"), kerr.PolicyViolation)
	wantErr(t, "retention.ms=-1", a.createOne(t, admin, 2, map[string]*string{"retention.ms": kmsgStr("-1")}, "events"), kerr.PolicyViolation)
	wantErr(t, "undeclared topic", a.createOne(t, admin, 1, nil, "audit"), kerr.TopicAuthorizationFailed)
	wantErr(t, "another tenant's name", a.createOne(t, admin, 1, nil, "globex.events"), kerr.TopicAuthorizationFailed)
	wantErr(t, "create events", a.createOne(t, admin, 2, map[string]*string{"retention.ms": kmsgStr("604800000")}, "events"), nil)
	// The broker holds the physical name, with the configuration.
	topics, err := directAdmin(a.oe.testEnv).ListTopics(a.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !topics.Has(events) || topics.Has("events") {
		t.Fatalf("broker topics %v: want %s", topics.Names(), events)
	}
	if got := len(topics[events].Partitions); got != 2 {
		t.Fatalf("%s has %d partitions", events, got)
	}
	wantBrokerConfig(t, a.oe.testEnv, events, "retention.ms", "604800000")
}

// alterConfigs: an alteration within the bounds reaches the broker, one
// past them is refused and leaves the value in force; a broker resource is
// never altered.
func (a *adminE2E) alterConfigs(t *testing.T) {
	admin, orders, env := a.admin, a.orders, a.oe.testEnv
	wantErr(t, "retention.ms=604800000", a.alterOne(t, admin, "orders", setConfig("retention.ms", "604800000")), nil)
	wantBrokerConfig(t, env, orders, "retention.ms", "604800000")
	// The seed's kafka-configs example: -1 refused, the value in force stays.
	wantErr(t, "retention.ms=-1", a.alterOne(t, admin, "orders", setConfig("retention.ms", "-1")), kerr.PolicyViolation)
	wantErr(t, "unclean.leader.election.enable", a.alterOne(t, admin, "orders", setConfig("unclean.leader.election.enable", "true")), kerr.PolicyViolation)
	wantErr(t, "min.insync.replicas", a.alterOne(t, admin, "orders", setConfig("min.insync.replicas", "1")), kerr.PolicyViolation)
	wantBrokerConfig(t, env, orders, "retention.ms", "604800000")
	wantErr(t, "cleanup.policy", a.alterOne(t, admin, "orders", setConfig("cleanup.policy", "delete,compact")), nil)
	wantBrokerConfig(t, env, orders, "cleanup.policy", "compact,delete")
	wantErr(t, "delete cleanup.policy", a.alterOne(t, admin, "orders", []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "cleanup.policy"}}), nil)
	wantErr(t, "undeclared topic", a.alterOne(t, admin, "audit", setConfig("retention.ms", "604800000")), kerr.TopicAuthorizationFailed)
	// Never a broker resource.
	rs, err := admin.AlterBrokerConfigs(a.ctx, setConfig("log.retention.ms", "-1"))
	if err == nil && len(rs) == 1 {
		err = rs[0].Err
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("AlterBrokerConfigs: %+v %v", rs, err)
	}
}

// describeConfigs: a topic's configuration is described with the value in
// force and without the broker's synonyms; a broker resource is never
// described.
func (a *adminE2E) describeConfigs(t *testing.T) {
	admin, orders := a.admin, a.orders
	wantErr(t, "retention.ms=604800000", a.alterOne(t, admin, "orders", setConfig("retention.ms", "604800000")), nil)
	eventually(t, "DescribeTopicConfigs orders", func() error {
		rcs, err := admin.DescribeTopicConfigs(a.ctx, "orders")
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
	direct, err := directAdmin(a.oe.testEnv).DescribeTopicConfigs(a.ctx, orders)
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
	brs, err := admin.DescribeBrokerConfigs(a.ctx)
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
}

// partitionsAndDeletion: events grows up to the partition bound, not past
// it, then is deleted from the broker, leaving the other topics; an
// undeclared topic is unknown.
func (a *adminE2E) partitionsAndDeletion(t *testing.T) {
	admin, events, env := a.admin, a.events, a.oe.testEnv
	rs, err := admin.UpdatePartitions(a.ctx, adminMaxPartitions+1, "events")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := rs.On("events", nil); err != nil || !errors.Is(r.Err, kerr.PolicyViolation) {
		t.Fatalf("UpdatePartitions past the bound: %+v %v", rs, err)
	}
	rs, err = admin.UpdatePartitions(a.ctx, adminMaxPartitions, "events")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := rs.On("events", nil); err != nil || r.Err != nil {
		t.Fatalf("UpdatePartitions to the bound: %+v %v", rs, err)
	}
	eventually(t, events+" on the broker", func() error {
		if topics, _ := directAdmin(env).ListTopics(a.ctx, events); len(topics[events].Partitions) != adminMaxPartitions {
			return fmt.Errorf("%d partitions", len(topics[events].Partitions))
		}
		return nil
	})
	dr, err := admin.DeleteTopics(a.ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := dr.On("events", nil); err != nil || r.Err != nil {
		t.Fatalf("DeleteTopics events: %+v %v", dr, err)
	}
	dr, err = admin.DeleteTopics(a.ctx, "audit")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := dr.On("audit", nil); err != nil || !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("DeleteTopics audit: %+v %v", dr, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		topics, err := directAdmin(env).ListTopics(a.ctx)
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
	if topics, _ := directAdmin(env).ListTopics(a.ctx); !topics.Has(a.orders) || !topics.Has(a.oe.phys("globex", "orders")) {
		t.Fatalf("the other topics went too: %v", topics.Names())
	}
}

// groups: a group of acme's committed through the gateway is on the
// broker under its physical name; its offsets of a declared topic are
// deleted, an undeclared one's are unknown; the group itself is deleted.
func (a *adminE2E) groups(t *testing.T) {
	admin := a.admin
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 0, LeaderEpoch: -1})
	cr, err := admin.CommitOffsets(a.ctx, "billing", offs)
	if err != nil || cr.Error() != nil {
		t.Fatalf("commit: %v %v", err, cr.Error())
	}
	phys := a.oe.group("acme", "billing")
	listed := func() []string {
		gs, err := directAdmin(a.oe.testEnv).ListGroups(a.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return gs.Groups()
	}
	if !slices.Contains(listed(), phys) {
		t.Fatalf("groups on the broker %v: want %s", listed(), phys)
	}
	do, err := admin.DeleteOffsets(a.ctx, "billing", kadm.TopicsSet{"orders": {0: {}}, "audit": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if err, ok := do.Lookup("orders", 0); !ok || err != nil {
		t.Fatalf("DeleteOffsets orders: %v %v", ok, err)
	}
	if err, ok := do.Lookup("audit", 0); !ok || !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("DeleteOffsets audit: %v %v", ok, err)
	}
	dg, err := admin.DeleteGroups(a.ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := dg["billing"]; !ok || r.Err != nil || len(dg) != 1 {
		t.Fatalf("DeleteGroups: %+v", dg)
	}
	if slices.Contains(listed(), phys) {
		t.Fatalf("%s still on the broker", phys)
	}
}

// noAdminScope: a client whose credential does not carry the admin scope
// creates, alters, describes and deletes nothing, and the broker's topics
// stay as they were.
func (a *adminE2E) noAdminScope(t *testing.T, cl *kadm.Client) {
	wantErr(t, "CreateTopics", a.createOne(t, cl, 1, nil, "events"), kerr.TopicAuthorizationFailed)
	wantErr(t, "AlterTopicConfigs", a.alterOne(t, cl, "orders", setConfig("retention.ms", "604800000")), kerr.TopicAuthorizationFailed)
	rcs, err := cl.DescribeTopicConfigs(a.ctx, "orders")
	if err == nil && len(rcs) == 1 {
		err = rcs[0].Err
	}
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("DescribeTopicConfigs: %+v %v", rcs, err)
	}
	dr, err := cl.DeleteTopics(a.ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := dr.On("orders", nil); err != nil || !errors.Is(r.Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("DeleteTopics: %+v %v", dr, err)
	}
	dg, err := cl.DeleteGroups(a.ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	if r := dg["billing"]; !errors.Is(r.Err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("DeleteGroups: %+v", dg)
	}
	if topics, _ := directAdmin(a.oe.testEnv).ListTopics(a.ctx); !topics.Has(a.orders) || topics.Has(a.events) {
		t.Fatalf("broker topics %v", topics.Names())
	}
}
