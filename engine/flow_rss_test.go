package engine

// Issue 11.3: the gateway's own peak RSS (VmHWM) while one consumer reads
// with 50 MiB / 10 MiB fetches: the gateway runs in a process of its own
// (this test binary again, TestFlowRSSChild), kfake and the consumer in
// this one. Run: FLEXWAY_FLOW_SPEED=1 go test ./engine -run 'TestFlowRSS$' -v

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// TestFlowRSSChild is the gateway of TestFlowRSS, in its own process: it
// serves until its stdin closes.
func TestFlowRSSChild(t *testing.T) {
	brokers := os.Getenv("FLEXWAY_FLOW_CHILD")
	if brokers == "" {
		t.Skip("the gateway of TestFlowRSS, run by it in a process of its own")
	}
	env := newTestEnvWith(t, envConfig{upstream: fmt.Sprintf("    brokers: [%q]\n", brokers)})
	fmt.Printf("BOOT %s %s\n", env.boot, env.keys["acme-app"])
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// procKB reads a "Name: N kB" line of /proc/pid/status.
func procKB(t *testing.T, pid int, name string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skip("no /proc")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == name+":" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

func TestFlowRSS(t *testing.T) {
	handRun(t, "a loopback memory run (96 MiB read 6 times)")
	const per, size, reads = 192, 256 << 10, 6
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "acme.orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	direct, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...), kgo.ProducerBatchMaxBytes(900<<10), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for p := int32(0); p < 2; p++ {
		for i := 0; i < per; i++ {
			if err := direct.ProduceSync(ctx, &kgo.Record{Topic: "acme.orders", Partition: p, Value: recordValue(i, size)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	direct.Close()

	cmd := exec.Command(os.Args[0], "-test.run", "^TestFlowRSSChild$", "-test.v")
	cmd.Env = append(os.Environ(), "FLEXWAY_FLOW_CHILD="+kf.ListenAddrs()[0], "GOMAXPROCS=2")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	var boot, key string
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "BOOT" {
			boot, key = f[1], f[2]
			break
		}
	}
	if boot == "" {
		t.Fatal("the gateway process did not start")
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	pid := cmd.Process.Pid
	idle := procKB(t, pid, "VmRSS")
	start, total := time.Now(), 0
	for k := 0; k < reads; k++ {
		cons, err := kgo.NewClient(kgo.SeedBrokers(boot), kgo.SASL(plain.Auth{User: "acme-app", Pass: key}.AsMechanism()),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().At(0), 1: kgo.NewOffset().At(0)}}),
			kgo.FetchMaxBytes(50<<20), kgo.FetchMaxPartitionBytes(10<<20))
		if err != nil {
			t.Fatal(err)
		}
		for got := 0; got < 2*per; {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("read %d: %d of %d records", k, got, 2*per)
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
			fs.EachRecord(func(r *kgo.Record) { got++; total += len(r.Value) })
		}
		cons.Close()
	}
	el := time.Since(start)
	hwm, rss := procKB(t, pid, "VmHWM"), procKB(t, pid, "VmRSS")
	t.Logf("gateway process: idle RSS %d MiB, peak RSS (VmHWM) %d MiB, RSS after %d MiB; %d MiB read in %v (%.0f MiB/s)",
		idle>>10, hwm>>10, rss>>10, total>>20, el.Round(time.Millisecond), float64(total)/(1<<20)/el.Seconds())
	if hwm > 96<<10 {
		t.Fatalf("the gateway's peak RSS is %d MiB (target 96 MiB)", hwm>>10)
	}
}
