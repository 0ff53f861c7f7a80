package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func produceN(t *testing.T, cl *kgo.Client, topic string, n int, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		r := &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i % 4)), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
}

// consumeAll reads topic from the start until n records or the timeout.
func consumeAll(t *testing.T, cl *kgo.Client, n int, d time.Duration) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Logf("fetch error %s/%d: %v", topic, p, err)
			}
		})
		out = append(out, fs.Records()...)
	}
	return out
}

// I1, N1, D4, D5: a tenant produces (acks=all, acks=1, acks=0, compressed)
// and consumes its topic through the gateway; the broker holds the
// physical name; records arrive in order, once.
func TestProduceConsumeThroughGateway(t *testing.T) {
	env := newTestEnv(t, "")
	cases := []struct {
		name string
		opts []kgo.Opt
	}{
		{"acks=all", []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}},
		{"acks=1", []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}},
		{"zstd", []kgo.Opt{kgo.ProducerBatchCompression(kgo.ZstdCompression())}},
		{"lz4", []kgo.Opt{kgo.ProducerBatchCompression(kgo.Lz4Compression())}},
	}
	total := 0
	for _, c := range cases {
		prod := env.client("acme-app", c.opts...)
		produceN(t, prod, "orders", 25, c.name)
		total += 25
	}
	// acks=0: no answer comes back, the records still land.
	prod0 := env.client("acme-app", kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	produceN(t, prod0, "orders", 25, "acks=0")
	total += 25

	cons := env.client("acme-app", kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	recs := consumeAll(t, cons, total, 20*time.Second)
	if len(recs) != total {
		t.Fatalf("consumed %d records through the gateway, want %d", len(recs), total)
	}
	seen := map[string]bool{}
	last := map[int32]int64{}
	for _, r := range recs {
		if r.Topic != "orders" {
			t.Fatalf("record under topic %q, want the short name", r.Topic)
		}
		if seen[string(r.Value)] {
			t.Fatalf("record %s twice", r.Value)
		}
		seen[string(r.Value)] = true
		if o, ok := last[r.Partition]; ok && r.Offset <= o {
			t.Fatalf("offsets out of order on partition %d", r.Partition)
		}
		last[r.Partition] = r.Offset
	}

	// The broker holds acme.orders, with the same records.
	direct := env.directClient(kgo.ConsumeTopics(env.phys("acme", "orders")), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if got := consumeAll(t, direct, total, 10*time.Second); len(got) != total {
		t.Fatalf("the broker's acme.orders holds %d records, want %d", len(got), total)
	}
}

// N2, D3: globex sees none of acme's topics or records; Metadata lists the
// session's topics only, by short name, with the virtual cluster's id and
// the brokers renamed to the fallback ports.
func TestTenantsDoNotSeeEachOther(t *testing.T) {
	env := newTestEnv(t, "")
	produceN(t, env.client("acme-app"), "orders", 10, "acme-secret")
	produceN(t, env.client("globex-app"), "orders", 5, "globex")

	cons := env.client("globex-app", kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	recs := consumeAll(t, cons, 5, 10*time.Second)
	if len(recs) != 5 {
		t.Fatalf("globex consumed %d records, want its 5", len(recs))
	}
	for _, r := range recs {
		if string(r.Value[:6]) != "globex" {
			t.Fatalf("globex read another tenant's record %q", r.Value)
		}
	}
	adm := kadm.NewClient(env.client("globex-app"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if md.Cluster != "shop" {
		t.Fatalf("cluster id %q, want the virtual cluster's name", md.Cluster)
	}
	if len(md.Topics) != 1 || md.Topics["orders"].Topic != "orders" {
		t.Fatalf("globex's metadata lists %v, want only orders", md.Topics.Names())
	}
	for _, b := range md.Brokers {
		if b.Host != "127.0.0.1" || b.Port < 1 {
			t.Fatalf("broker %d announced at %s:%d", b.NodeID, b.Host, b.Port)
		}
	}
	// An undeclared topic, and one not opened to the identity: unknown, not asked of the broker.
	md2, err := adm.Metadata(ctx, "payments", "nosuch")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"payments", "nosuch"} {
		if !errors.Is(md2.Topics[name].Err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("%s: %v, want UNKNOWN_TOPIC_OR_PARTITION", name, md2.Topics[name].Err)
		}
	}
}

// D4: a Produce without a send operation is TOPIC_AUTHORIZATION_FAILED;
// an idempotent producer without one is CLUSTER_AUTHORIZATION_FAILED (D7).
func TestProduceWithoutSendRefused(t *testing.T) {
	env := newTestEnv(t, "")
	reader := env.client("acme-orders-reader", kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := reader.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce without send: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	idem := env.client("acme-orders-reader", kgo.RecordRetries(1))
	err = idem.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("idempotent produce without send: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	// Nothing reached the broker.
	direct := env.directClient(kgo.ConsumeTopics(env.phys("acme", "orders")), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if got := consumeAll(t, direct, 1, 2*time.Second); len(got) != 0 {
		t.Fatalf("a refused produce reached the broker: %d records", len(got))
	}
}

// I1, I4: unknown, mismatched or expired keys and a tenant with '_' are
// SASL_AUTHENTICATION_FAILED, logged with the cause, never the key.
func TestAuthenticationRefused(t *testing.T) {
	env := newTestEnv(t, "")
	cases := []struct{ user, pass, cause string }{
		{"nobody", "whatever-secret", "unknown key"},
		{"acme-app", "wrong-secret-value", "key mismatch"},
		{"acme-old", env.keys["acme-old"], "expired key"},
		{"bad-tenant", env.keys["bad-tenant"], "tenant missing"},
	}
	for _, c := range cases {
		cl, _ := kgo.NewClient(kgo.SeedBrokers(env.boot), kgo.SASL(plainAuth(c.user, c.pass)), kgo.RequestRetries(0))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := cl.Ping(ctx)
		cancel()
		cl.Close()
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("%s: %v, want SASL_AUTHENTICATION_FAILED", c.cause, err)
		}
		line := env.waitLog(5*time.Second, "kafka authentication refused", c.cause)
		if c.pass != "" && contains(line, c.pass) {
			t.Fatalf("the log line shows the secret: %s", line)
		}
	}
}
