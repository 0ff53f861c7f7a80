package engine

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine/session"
	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// startTwoUpstreams starts the env's gateway on the configuration of
// testkit.WriteTwoUpstreams (upstreams a and b reach brokersA and
// brokersB; listener: the lines under listeners.kafka, with no bound on
// connections per address added); its key acme-app is kept in env.keys.
func (env *testEnv) startTwoUpstreams(brokersA, brokersB, listener string, opt ...Option) {
	t := env.t
	t.Helper()
	env.keys["acme-app"] = testkit.WriteTwoUpstreams(t, env.dir, brokersA, brokersB, loopbackBounds(listener))
	snap, err := configs.Load(filepath.Join(env.dir, "flexway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	env.start(snap, opt...)
}

// twoUpstreams boots a gateway whose upstreams a and b reach brokersA and
// brokersB (one broker each, node 0): cluster shop on a at base (bootstrap)
// and base+1, cluster bank on b at base+2 and base+3; opt are given to the
// engine after the test's own (a logger there replaces the one of logs).
// It returns the env and the bootstraps of shop and bank.
func twoUpstreams(t *testing.T, brokersA, brokersB string, opt ...Option) (env *testEnv, shop, bank string) {
	t.Helper()
	base := testkit.FreePorts(t, 4)
	env = bareEnv(t)
	env.startTwoUpstreams(brokersA, brokersB, testkit.TwoUpstreamsPlaintext(base), opt...)
	return env, fmt.Sprintf("127.0.0.1:%d", base), fmt.Sprintf("127.0.0.1:%d", base+2)
}

func kfakeCluster(t *testing.T, id string, topics ...string) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID(id), kfake.SeedTopics(1, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

func produceThrough(t *testing.T, boot, key, topic string) error {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(boot), kgo.SASL(plainAuth("acme-app", key)),
		kgo.RequestRetries(1), kgo.RetryTimeout(2*time.Second), kgo.RecordDeliveryTimeout(4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

// U3: two upstreams whose addresses differ (127.0.0.1 and localhost, which
// the load-time check cannot tell apart) but whose brokers name one
// physical cluster, under two prefixes: the later one (b) is refused at
// start with the seed's line at Error, and a client of its virtual cluster
// has its connection closed at once (the line again, naming the cluster);
// the earlier one serves.
func TestSameClusterTwoUpstreamsRefused(t *testing.T) {
	addr := kfakeCluster(t, "physical-1", "acme.orders", "b.acme.ledger")
	_, port, _ := net.SplitHostPort(addr)
	env, shop, bank := twoUpstreams(t, "127.0.0.1:"+port, "localhost:"+port)
	key := env.keys["acme-app"]
	env.waitLog(5*time.Second, "level=ERROR", session.MsgSameCluster, "upstream=b", "same_as=a", "cluster_id=physical-1")
	refused := env.e.RefusedClusters()
	if len(refused) != 1 || !strings.Contains(refused["bank"], session.MsgSameCluster) || !strings.Contains(refused["bank"], "upstream b") {
		t.Fatalf("RefusedClusters (what the start banner says) = %q, want bank alone, refused by the seed's line", refused)
	}

	if err := produceThrough(t, shop, key, "orders"); err != nil {
		t.Fatalf("cluster shop (upstream a, the first) refused: %v", err)
	}
	if err := produceThrough(t, bank, key, "ledger"); err == nil {
		t.Fatal("cluster bank (upstream b, the same physical cluster under another prefix) served a Produce")
	}
	env.waitLog(5*time.Second, "level=ERROR", session.MsgSameCluster, "cluster=bank", "upstream=b")
}

// U3, the other side: two physical clusters (two ids) under two prefixes
// are both served, and nothing is logged about them.
func TestTwoClustersTwoUpstreamsServed(t *testing.T) {
	a := kfakeCluster(t, "physical-1", "acme.orders")
	b := kfakeCluster(t, "physical-2", "b.acme.ledger")
	env, shop, bank := twoUpstreams(t, a, b)
	key, logs := env.keys["acme-app"], env.logs
	if refused := env.e.RefusedClusters(); len(refused) != 0 {
		t.Fatalf("RefusedClusters = %q, want none", refused)
	}
	if err := produceThrough(t, shop, key, "orders"); err != nil {
		t.Fatalf("cluster shop: %v", err)
	}
	if err := produceThrough(t, bank, key, "ledger"); err != nil {
		t.Fatalf("cluster bank: %v", err)
	}
	for {
		select {
		case line := <-logs.ch:
			if contains(line, session.MsgSameCluster) {
				t.Fatalf("two physical clusters taken for one: %s", line)
			}
			continue
		default:
		}
		break
	}
}

// U3 on the TLS port: the cluster is known once SNI names it; a client of
// the refused upstream's cluster is closed then, before its handshake, with
// the seed's line; the other cluster's client completes its handshake.
func TestSameClusterRefusedOnTLSPort(t *testing.T) {
	addr := kfakeCluster(t, "physical-1", "acme.orders", "b.acme.ledger")
	_, port, _ := net.SplitHostPort(addr)
	ca := newTestCA(t, "flexway test CA")
	scert, skey := ca.issue(t, "gateway", []string{"*.shop." + sniDomain, "*.bank." + sniDomain}, false, time.Now().Add(24*time.Hour))
	env := bareEnv(t)
	writeFile(t, env.dir, "tls.crt", scert)
	writeFile(t, env.dir, "tls.key", skey)
	env.startTwoUpstreams("127.0.0.1:"+port, "localhost:"+port, fmt.Sprintf(`    address: "127.0.0.1:0"
    tls: { cert_file: ./tls.crt, key_file: ./tls.key }
    sni_domain: %s
`, sniDomain))
	e := env.e
	handshake := func(cluster string) error {
		raw, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", e.TLSPort()), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		c := tls.Client(raw, &tls.Config{ServerName: "bootstrap." + cluster + "." + sniDomain, RootCAs: ca.pool()})
		c.SetDeadline(time.Now().Add(5 * time.Second))
		return c.Handshake()
	}
	if err := handshake("shop"); err != nil {
		t.Fatalf("cluster shop (upstream a): %v", err)
	}
	if err := handshake("bank"); err == nil {
		t.Fatal("cluster bank (upstream b, the same physical cluster under another prefix): handshake completed")
	}
	env.waitLog(5*time.Second, "level=ERROR", session.MsgSameCluster, "cluster=bank", "upstream=b")
}
