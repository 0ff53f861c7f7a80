package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// procKiB reads a "VmX:   N kB" line of /proc/<pid>/status.
func procKiB(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// Issue 11.3, B2, on the built binary: consumers fetching 50 MiB / 10 MiB
// per partition read everything through flexway at once; its peak RSS
// stays within the 96 MiB, and once they are gone its RSS comes
// back near where it was idle well within a minute (engine/reclaim.go),
// not at Go's forced collection two minutes later.
func TestRSSBackNearIdleAfterLargeFetches(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and relays large fetches")
	}
	bin := buildFlexway(t)
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "acme.orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()

	// 96 MiB of 1 KiB records, written straight to the broker.
	const records, size = 96 << 10, 1 << 10
	produceDirect(t, k, records, size)

	dir, base, _ := quickstartOn(t, k, "")
	// Many consumers from one address: the per-address bound opened.
	replaceIn(t, filepath.Join(dir, "flexway.yaml"), "  kafka:\n", "  kafka:\n    max_connections_per_ip: 0\n")
	keyb, err := os.ReadFile("../../configs/quickstart/acme-orders-reader.key")
	if err != nil {
		t.Fatal(err)
	}
	gw := startFlexway(t, bin, dir)
	gw.waitHealthz(base + 4)
	pid := gw.cmd.Process.Pid

	// Idle: one short connection first (what any first client sets up, the
	// tenant's series among it, is not a burst's), then a settled reading.
	one := consumerOf(t, base, strings.TrimSpace(string(keyb)), 1<<20, 1<<20)
	if err := one.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	one.Close()
	time.Sleep(3 * time.Second)
	idle := procKiB(t, pid, "VmRSS")

	const consumers = 20
	readAllThrough(t, base, strings.TrimSpace(string(keyb)), consumers, records)
	peak := procKiB(t, pid, "VmHWM")
	stopped := time.Now()

	var now int
	for {
		now = procKiB(t, pid, "VmRSS")
		if now <= idle+4<<10 || time.Since(stopped) > 45*time.Second {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("%d consumers read %d MiB each: RSS idle %d MiB, peak %d MiB, %d MiB %.0f s after they stopped",
		consumers, records*size>>20, idle>>10, peak>>10, now>>10, time.Since(stopped).Seconds())
	if peak > 96<<10 {
		t.Errorf("peak RSS %d MiB, want at most 96 MiB", peak>>10)
	}
	if now > idle+4<<10 {
		t.Errorf("RSS %d MiB 45 s after the consumers stopped, idle %d MiB: want within 4 MiB of idle", now>>10, idle>>10)
	}
	gw.stop()
}

// consumerOf is a franz-go consumer of orders from the start through the
// quickstart's plaintext listener at base, without a group.
func consumerOf(t *testing.T, base int, key string, fetchMax, partMax int32) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", base)),
		kgo.SASL(plain.Auth{User: "acme-orders-reader", Pass: key}.AsMechanism()),
		kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(fetchMax),
		kgo.FetchMaxPartitionBytes(partMax),
	)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// produceDirect writes records values of size bytes to acme.orders on
// kfake cluster k, straight to the broker, and waits for every
// acknowledgement.
func produceDirect(t *testing.T, k *kfake.Cluster, records, size int) {
	t.Helper()
	direct, err := kgo.NewClient(kgo.SeedBrokers(k.ListenAddrs()...), kgo.DefaultProduceTopic("acme.orders"),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	val := make([]byte, size)
	var perr error
	var pmu sync.Mutex
	var pw sync.WaitGroup
	for i := 0; i < records; i++ {
		pw.Add(1)
		direct.Produce(context.Background(), &kgo.Record{Value: val}, func(_ *kgo.Record, err error) {
			if err != nil {
				pmu.Lock()
				perr = err
				pmu.Unlock()
			}
			pw.Done()
		})
	}
	pw.Wait()
	direct.Close()
	if perr != nil {
		t.Fatal(perr)
	}
}

// readAllThrough runs consumers consumers of orders at once through the
// gateway at base, each fetching 50 MiB / 10 MiB per partition until it has
// read records records, within 90 seconds.
func readAllThrough(t *testing.T, base int, key string, consumers, records int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, consumers)
	for c := 0; c < consumers; c++ {
		cl := consumerOf(t, base, key, 50<<20, 10<<20)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			got := 0
			for got < records {
				fs := cl.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					errs <- fmt.Errorf("after %d records: %w", got, err)
					return
				}
				got += fs.NumRecords()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
