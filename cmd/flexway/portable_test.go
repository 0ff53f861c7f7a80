package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// Issue 23.4: the build a system without Linux's calls gets (no splice, no
// epoll watcher, no SIOCOUTQ: engine/kernel's *_other.go, chosen on Linux
// by the flexway_portable tag) serves `make run`'s quickstart as it is: its
// embedded upstream of three brokers, franz-go at its defaults producing
// 1 KiB records and 512 KiB ones, a group reading them back with 50 MiB /
// 10 MiB fetches. Every record arrives once, in order within its
// partition, and nothing was spliced (the fallback ran, not the kernel's
// path).
func TestQuickstartPortableBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and moves records through it")
	}
	bin := buildFlexway(t, "flexway_portable")
	dir := copyQuickstart(t)
	base := testkit.FreePorts(t, 5)
	cfg, _ := os.ReadFile(filepath.Join(dir, "flexway.yaml"))
	c := strings.NewReplacer("from: 19092, to: 19095", fmt.Sprintf("from: %d, to: %d", base, base+3),
		"127.0.0.1:9464", fmt.Sprintf("127.0.0.1:%d", base+4)).Replace(string(cfg))
	if !strings.Contains(c, fmt.Sprintf("127.0.0.1:%d", base+4)) {
		t.Fatal("the quickstart changed: the test's replacements no longer apply")
	}
	writeTestFile(t, filepath.Join(dir, "flexway.yaml"), []byte(c))
	gw := startFlexway(t, bin, dir)
	gw.waitHealthz(base + 4)

	keyb, err := os.ReadFile("../../configs/quickstart/acme-app.key")
	if err != nil {
		t.Fatal(err)
	}
	auth := kgo.SASL(plain.Auth{User: "acme-app", Pass: strings.TrimSpace(string(keyb))}.AsMechanism())
	seed := kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", base))
	sizes := make([]int, 0, 2020)
	for i := 0; i < 2000; i++ {
		sizes = append(sizes, 1<<10)
	}
	for i := 0; i < 20; i++ {
		sizes = append(sizes, 512<<10)
	}
	portableProduce(t, seed, auth, sizes)
	portableConsume(t, seed, auth, sizes)

	if n := scrapeSum(t, base+4, "flexway_engine_spliced_bytes_total"); n != 0 {
		t.Fatalf("%v bytes spliced: the portable build took the kernel's path", n)
	}
}

// portableProduce writes one record of each size to orders, its sequence
// number in its first 8 bytes, and waits for every acknowledgement.
func portableProduce(t *testing.T, seed, auth kgo.Opt, sizes []int) {
	t.Helper()
	cl, err := kgo.NewClient(seed, auth, kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rs := make([]*kgo.Record, len(sizes))
	for i, n := range sizes {
		v := bytes.Repeat([]byte{byte(i)}, n)
		binary.BigEndian.PutUint64(v, uint64(i))
		rs[i] = &kgo.Record{Key: v[:8], Value: v}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// portableConsume reads orders in a group until every record of sizes is
// there, each whole, once, and in order within its partition.
func portableConsume(t *testing.T, seed, auth kgo.Opt, sizes []int) {
	t.Helper()
	cl, err := kgo.NewClient(seed, auth, kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("billing"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(50<<20), kgo.FetchMaxPartitionBytes(10<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seen := make([]bool, len(sizes))
	last := map[int32]int{}
	for got := 0; got < len(sizes); {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records read in 2 minutes", got, len(sizes))
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			i := int(binary.BigEndian.Uint64(r.Value))
			if i < 0 || i >= len(sizes) || seen[i] {
				t.Fatalf("record %d (partition %d, offset %d): unknown or repeated", i, r.Partition, r.Offset)
			}
			want := bytes.Repeat([]byte{byte(i)}, sizes[i])
			binary.BigEndian.PutUint64(want, uint64(i))
			if !bytes.Equal(r.Value, want) {
				t.Fatalf("record %d (partition %d, offset %d): not as written", i, r.Partition, r.Offset)
			}
			if p, ok := last[r.Partition]; ok && i < p {
				t.Fatalf("partition %d: record %d after %d", r.Partition, i, p)
			}
			seen[i], last[r.Partition] = true, i
			got++
		})
	}
}

// scrapeSum sums every sample of the series named name on /metrics.
func scrapeSum(t *testing.T, port int, name string) float64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), name) {
		t.Fatalf("/metrics has no %s", name)
	}
	return testkit.SumSeries(string(b), name)
}
