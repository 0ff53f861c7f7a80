// An example's clients for TestExamples: an identity per listener, records
// produced and consumed back, and the bounded administration.

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// usable: a certificate needs the TLS listener.
func (id *identity) usable(listener string) bool { return id.cert == nil || listener == "tls" }

func (ex *example) pick(listener, kind string, ok func(*identity) bool) *identity {
	for _, id := range ex.ids {
		if (kind == "" || id.kind == kind) && id.usable(listener) && ok(id) {
			return id
		}
	}
	return nil
}

// sender and receiver: the first identity usable on listener that produces
// (consumes) orders, preferring one that does both.
func (ex *example) sender(listener string) *identity {
	if id := ex.pick(listener, "", func(id *identity) bool { return id.send && id.receive }); id != nil {
		return id
	}
	return ex.pick(listener, "", func(id *identity) bool { return id.send })
}

func (ex *example) receiver(listener string) *identity {
	if id := ex.pick(listener, "", func(id *identity) bool { return id.send && id.receive }); id != nil {
		return id
	}
	return ex.pick(listener, "", func(id *identity) bool { return id.receive })
}

// client connects id through listener, as a user's client would: the
// bootstrap name the example announces (resolved to loopback), TLS with
// the SNI name and the demo CA, SASL or a client certificate.
func (ex *example) client(t *testing.T, listener string, id *identity, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	var tc *tls.Config
	if listener == "tls" {
		tc = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: testkit.PoolFromFile(t, ex.caFile)}
		if id != nil && id.cert != nil {
			tc.Certificates = []tls.Certificate{*id.cert}
		}
	}
	base := []kgo.Opt{kgo.SeedBrokers(ex.seeds[listener]), kgo.Dialer(testkit.LoopbackDialer(tc)),
		kgo.ClientID("examples-test"), kgo.RetryTimeout(10 * time.Second)}
	if id != nil && id.mech != nil {
		base = append(base, kgo.SASL(id.mech))
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// produceAndConsume: through listener, each kind of identity that may
// produce writes one record, then each kind that may consume reads back
// every record written. One client at a time: the listener's default
// max_connections_per_ip (16) holds for the test's single address.
func (ex *example) produceAndConsume(t *testing.T, listener, name string) {
	t.Helper()
	var values []string
	for _, kind := range ex.kinds {
		id := ex.pick(listener, kind, func(id *identity) bool { return id.send })
		if id == nil {
			continue
		}
		v := fmt.Sprintf("%s: %s through %s (%s)", name, kind, listener, id.name)
		cl := ex.client(t, listener, id)
		produce(t, cl, v)
		cl.Close()
		values = append(values, v)
	}
	for _, kind := range ex.kinds {
		id := ex.pick(listener, kind, func(id *identity) bool { return id.receive })
		if id == nil {
			continue
		}
		cl := ex.client(t, listener, id, consumerOpts()...)
		consumeUntil(t, cl, values...)
		cl.Close()
	}
}

// administer: a token carrying the admin_scope creates orders within the
// bounds (or finds it there, on an upstream that seeds it) and is refused
// POLICY_VIOLATION outside them (seed 002 "Bounded administration").
func (ex *example) administer(t *testing.T, listener string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id := &identity{mech: oauth.Oauth(func(context.Context) (oauth.Auth, error) { return oauth.Auth{Token: ex.adminToken}, nil })}
	cl := ex.client(t, listener, id, kgo.RequestRetries(0))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	create := func(partitions int32, cfg map[string]*string) error {
		t.Helper()
		rs, err := adm.CreateTopics(ctx, partitions, -1, cfg, exampleTopic)
		if err != nil {
			return err
		}
		r, ok := rs[exampleTopic]
		if !ok {
			t.Fatalf("CreateTopics %s: %+v", exampleTopic, rs)
		}
		return r.Err
	}
	str := func(s string) *string { return &s }
	max := int32(ex.snap.Listener.MaxTopicPartitions)
	if err := create(max+1, nil); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("CreateTopics with %d partitions (max_topic_partitions %d): %v, want POLICY_VIOLATION", max+1, max, err)
	}
	if err := create(3, map[string]*string{"retention.ms": str("-1")}); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("CreateTopics with retention.ms=-1: %v, want POLICY_VIOLATION", err)
	}
	if err := create(3, map[string]*string{"retention.ms": str("604800000")}); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("CreateTopics with 3 partitions, retention.ms=604800000: %v", err)
	}
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: str("-1")}}, exampleTopic)
	if err == nil {
		var r kadm.AlterConfigsResponse
		if r, err = rs.On(exampleTopic, nil); err == nil {
			err = r.Err
		}
	}
	if !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("AlterTopicConfigs retention.ms=-1: %v, want POLICY_VIOLATION", err)
	}
}

// consumerOpts make a client read orders from its start, outside any group.
func consumerOpts() []kgo.Opt {
	return []kgo.Opt{kgo.ConsumeTopics(exampleTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
}

func produce(t *testing.T, cl *kgo.Client, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: exampleTopic, Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatalf("produce %q: %v", value, err)
	}
}

// consumeUntil polls cl until it has read every value.
func consumeUntil(t *testing.T, cl *kgo.Client, values ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	missing := map[string]bool{}
	for _, v := range values {
		missing[v] = true
	}
	for len(missing) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume: %d records never read: %v", len(missing), missing)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("consume %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) { delete(missing, string(r.Value)) })
	}
}
