// Issue 25.2 against Apache Kafka itself: the broker of scripts/test-kafka.sh
// killed with SIGKILL mid-run and started again on its state directory,
// while two idempotent producers (franz-go's and the Java client's) and a
// group write and read through the built gateway. It runs in test-kafka.sh's phase "kafka broker killed",
// alone on the broker, and skips everywhere else.
package faults

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// What scripts/test-kafka.sh tells the tests of its broker.
const (
	envUpstream     = "FLEXWAY_TEST_UPSTREAM"       // "kafka" in the real-broker phases
	envKafka        = "FLEXWAY_TEST_KAFKA"          // its PLAINTEXT address
	envKafkaPID     = "FLEXWAY_TEST_KAFKA_PID_FILE" // the file holding its pid (scripts/kafka-start.sh writes it)
	envKafkaRestart = "FLEXWAY_TEST_KAFKA_RESTART"  // a shell command that starts it again on its state, and waits until it serves
)

// realBroker is the real broker of the phase.
type realBroker struct {
	addr, pidFile, restart string
}

// needRealKafka skips unless the test runs in a real-broker phase of
// scripts/test-kafka.sh; there, the broker's address, pid file and restart
// command must all be given.
func needRealKafka(t *testing.T) realBroker {
	t.Helper()
	if os.Getenv(envUpstream) != "kafka" {
		t.Skipf("a real Apache Kafka broker killed and restarted: runs under scripts/test-kafka.sh (%s=kafka), in make test", envUpstream)
	}
	b := realBroker{addr: os.Getenv(envKafka), pidFile: os.Getenv(envKafkaPID), restart: os.Getenv(envKafkaRestart)}
	if b.addr == "" || b.pidFile == "" || b.restart == "" {
		t.Fatalf("%s=kafka without %s, %s and %s: run it through scripts/test-kafka.sh", envUpstream, envKafka, envKafkaPID, envKafkaRestart)
	}
	return b
}

// pid is the broker's pid, from its pid file, checked to be a Kafka broker.
func (b realBroker) pid(t *testing.T) int {
	t.Helper()
	raw, err := os.ReadFile(b.pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("%s: %v", b.pidFile, err)
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || !strings.Contains(string(cmdline), "kafka.Kafka") {
		t.Fatalf("pid %d of %s is not a running Kafka broker (%v)", pid, b.pidFile, err)
	}
	return pid
}

// kill ends the broker with SIGKILL and waits until it is gone: every
// thread ended, its sockets closed (its first thread may be a zombie its
// parent has not reaped yet, while the others still end).
func (b realBroker) kill(t *testing.T) {
	t.Helper()
	pid := strconv.Itoa(b.pid(t))
	n, _ := strconv.Atoi(pid)
	if err := syscall.Kill(n, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the broker killed", func() bool {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		threads, terr := os.ReadDir("/proc/" + pid + "/task")
		return err != nil || terr != nil || strings.Contains(string(stat), ") Z ") && len(threads) <= 1
	})
}

// start runs the restart command, which returns once the broker serves.
func (b realBroker) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sh", "-c", b.restart).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", b.restart, err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}

// createTopic creates topic on the broker (auto.create.topics.enable=false
// there) with 3 partitions and waits until each has a leader; it is
// deleted at the test's end.
func (b realBroker) createTopic(t *testing.T, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		t.Fatal(err)
	}
	// Closed before the broker is killed: an idle connection of the test
	// would hold the broker's port, half-closed, past the kill.
	defer cl.Close()
	adm := kadm.NewClient(cl)
	t.Cleanup(func() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
		if err != nil {
			return
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		kadm.NewClient(cl).DeleteTopics(ctx, topic)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the topic's leaders", func() bool {
		md, err := adm.Metadata(ctx, topic)
		if err != nil || md.Topics[topic].Err != nil || len(md.Topics[topic].Partitions) != 3 {
			return false
		}
		for _, p := range md.Topics[topic].Partitions {
			if p.Leader < 0 || p.Err != nil {
				return false
			}
		}
		return true
	})
}

// U2, U4: Apache Kafka killed with SIGKILL while two idempotent producers
// (acks=all: franz-go's, and the Java client's at kafka-clients' defaults)
// and a group write and read through the gateway, then started again on
// the same state directory (its log recovered, the producers' state
// rebuilt from it). The clients ride it out within their retry budgets,
// none restarted: every record acknowledged is on the broker once, in
// order per producer and partition, and read by the group. (The Java
// producer alongside, not in a test of its own: one kill and one restart
// of the broker serve both.) The gateway says its broker connections ended, once
// per client connection, and the broker unreachable once per route while
// it is down, not once per client retry.
func TestRealKafkaKilledAndRestarted(t *testing.T) {
	b := needRealKafka(t)
	prefix := "f" + randomHex(t) + "."
	b.createTopic(t, prefix+"acme.orders")
	gw := startGateway(t, writeConfig(t, []string{b.addr}, gwExtra{prefix: prefix}))
	env := &faultEnv{t: t, gw: gw, brokers: []string{b.addr}, topic: prefix + "acme.orders", javaFor: realKafkaJavaFor}
	var open float64 // the clients' connections to the gateway when the broker is killed
	caused := env.run(2*time.Millisecond, 100, func(w *workload) {
		open = testkit.SumSeries(gw.metrics(), "flexway_kafka_connections{")
		b.kill(t)
		acked, t0 := w.ackedCount(), time.Now()
		b.start(t)
		t.Logf("the broker killed and serving again in %v, %d records acknowledged meanwhile",
			time.Since(t0).Round(time.Millisecond), w.ackedCount()-acked)
	})
	// One broker serves every connection: each client connection's line once.
	if n := caused[brokerLines[0]]; n == 0 || float64(n) > open {
		t.Fatalf("%q written %d times for one kill, %v client connections open", brokerLines[0], n, open)
	}
	if n := caused[brokerLines[1]]; n == 0 || n > 2 {
		t.Fatalf("%q written %d times for one outage of one broker", brokerLines[1], n)
	}
}

// realKafkaJavaFor is how long the Java producer writes in
// TestRealKafkaKilledAndRestarted: past its warm-up (about 2 s), the kill
// and the broker's restart (15 s measured on 2 busy cores, 2026-12-05),
// with room for a restart of 40 s; the test's wall time is about this.
const realKafkaJavaFor = 45 * time.Second

func randomHex(t *testing.T) string {
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
