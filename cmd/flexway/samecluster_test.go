package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// U3 on the built binary: a flexway.yaml whose upstreams a and b reach one
// kfake cluster under two addresses (127.0.0.1 and localhost, which the
// load cannot tell apart) and two prefixes. flexway starts, logs the seed's
// line at Error naming b, prints a banner that gives the bootstrap and
// kcat commands of a's cluster and says b's is refused (no bootstrap, no
// command), serves the cluster of a, and closes at once the connections
// to the cluster of b (the line again); SIGTERM exits 0.
func TestSameClusterRefusedByTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildFlexway(t)
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("physical-1"), kfake.SeedTopics(1, "acme.orders", "b.acme.ledger"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	_, port, _ := net.SplitHostPort(k.ListenAddrs()[0])
	dir := t.TempDir()
	base := testkit.FreePorts(t, 4)
	key := testkit.WriteTwoUpstreams(t, dir, "127.0.0.1:"+port, "localhost:"+port, testkit.TwoUpstreamsPlaintext(base))
	gw := startFlexway(t, bin, dir)
	gw.waitLog("flexway started", 20*time.Second)
	line := logLine(gw.stderr.String(), "two upstreams reach the same physical cluster")
	for _, want := range []string{`"level":"ERROR"`, `"msg":"kafka connection refused: two upstreams reach the same physical cluster"`, `"upstream":"b"`, `"same_as":"a"`} {
		if !strings.Contains(line, want) {
			t.Fatalf("the start's line %q lacks %s", line, want)
		}
	}
	out := gw.waitStdout("\ncluster bank", 5*time.Second)
	shopBoot, bankBoot := fmt.Sprintf("127.0.0.1:%d", base), fmt.Sprintf("127.0.0.1:%d", base+2)
	if !strings.Contains(out, "kcat -P -b "+shopBoot) {
		t.Errorf("the banner gives no kcat command for cluster shop (%s):\n%s", shopBoot, out)
	}
	if strings.Contains(out, bankBoot) {
		t.Errorf("the banner advertises the refused cluster bank (%s):\n%s", bankBoot, out)
	}
	bank := logLine(out, "cluster bank")
	for _, want := range []string{"refused", "two upstreams reach the same physical cluster", "upstream b", "upstream a", "physical-1"} {
		if !strings.Contains(bank, want) {
			t.Errorf("the banner's line on cluster bank %q lacks %q", bank, want)
		}
	}

	produce := func(bootstrap int, topic string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", bootstrap)),
			kgo.SASL(plain.Auth{User: "acme-app", Pass: key}.AsMechanism()),
			kgo.RequestRetries(1), kgo.RetryTimeout(2*time.Second), kgo.RecordDeliveryTimeout(4*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
	}
	if err := produce(base, "orders"); err != nil {
		t.Fatalf("cluster shop (upstream a): %v", err)
	}
	if err := produce(base+2, "ledger"); err == nil {
		t.Fatal("cluster bank (upstream b, the same physical cluster under another prefix) served a Produce")
	}
	gw.waitLog(`"cluster":"bank"`, 5*time.Second)
	gw.stop()
}

// logLine returns the first line of log holding s.
func logLine(log, s string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
