package engine

// End-to-end consumer groups through the gateway with the other clients:
// kcat's balanced consumer, sarama, confluent-kafka-python and
// kafka-python. Each consumes and commits, then a new consumer of the group
// resumes after it; the broker holds the group under its physical name.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// kcat's balanced consumer (-G) through the gateway: it consumes and
// commits; a second run of the same group resumes after the first.
func TestKcatGroupConsumer(t *testing.T) {
	needBin(t, "/usr/bin/kcat")
	env := newTestEnv(t, "")
	run := func(n int) []string {
		t.Helper()
		args := env.kcatArgs("acme-app", "-G", "billing", "-X", "auto.offset.reset=earliest",
			"-X", "session.timeout.ms=6000", "-c", fmt.Sprint(n), "-f", "%t %s\n", "-q", "orders")
		stdout, stderr, err := runExt(t, 30*time.Second, "", "/usr/bin/kcat", args...)
		if err != nil {
			t.Fatalf("kcat -G: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, tail(stderr, 4000))
		}
		var vals []string
		for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
			f := strings.Fields(l)
			if len(f) != 2 || f[0] != "orders" {
				t.Fatalf("bad kcat line %q (want the short topic name)\n%s", l, stdout)
			}
			vals = append(vals, f[1])
		}
		sort.Strings(vals)
		return vals
	}
	first := produceParts(t, env, 10, "k")
	sort.Strings(first)
	if got := run(10); !slices.Equal(got, first) {
		t.Fatalf("kcat -G consumed %q, want %q", got, first)
	}
	checkBrokerGroup(t, env, "billing", 10)
	second := produceParts(t, env, 4, "l")
	if got := run(4); !slices.Equal(got, second) {
		t.Fatalf("a second kcat -G of the group consumed %q, want only the new %q", got, second)
	}
	checkBrokerGroup(t, env, "billing", 14)
}

// saramaHandler records what a sarama group member consumes, marking and
// committing each record.
type saramaHandler struct {
	mu  sync.Mutex
	got []string
	bad []string
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		h.mu.Lock()
		if msg.Topic != "orders" {
			h.bad = append(h.bad, msg.Topic)
		}
		h.got = append(h.got, string(msg.Value))
		h.mu.Unlock()
		sess.MarkMessage(msg, "")
		sess.Commit()
	}
	return nil
}

func (h *saramaHandler) values() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}

// saramaConsume consumes n records of orders in group through the gateway
// with sarama (SASL PLAIN), then waits settle for records beyond n.
func saramaConsume(t *testing.T, env *testEnv, group string, n int, settle time.Duration) []string {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.ClientID = "sarama-e2e"
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	cfg.Net.SASL.Version = sarama.SASLHandshakeV1
	cfg.Net.SASL.User = "acme-app"
	cfg.Net.SASL.Password = env.keys["acme-app"]
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Group.Heartbeat.Interval = 300 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Consumer.MaxWaitTime = 300 * time.Millisecond
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	cg, err := sarama.NewConsumerGroup([]string{env.boot}, group, cfg)
	if err != nil {
		t.Fatalf("sarama consumer group: %v", err)
	}
	h := &saramaHandler{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{"orders"}, h); err != nil && ctx.Err() == nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	deadline := time.Now().Add(20 * time.Second)
	for len(h.values()) < n && time.Now().Before(deadline) {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("sarama Consume: %v", err)
		case err := <-cg.Errors():
			t.Logf("sarama: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	time.Sleep(settle)
	cancel()
	<-done
	if err := cg.Close(); err != nil {
		t.Fatalf("sarama close: %v", err)
	}
	if len(h.bad) > 0 {
		t.Fatalf("sarama records under topics %q", h.bad)
	}
	got := h.values()
	sort.Strings(got)
	return got
}

// sarama's consumer group through the gateway consumes and commits; a new
// consumer of the group resumes after it.
func TestSaramaConsumerGroup(t *testing.T) {
	env := newTestEnv(t, "")
	first := produceParts(t, env, 10, "s")
	sort.Strings(first)
	if got := saramaConsume(t, env, "sarama-billing", 10, 500*time.Millisecond); !slices.Equal(got, first) {
		t.Fatalf("sarama consumed %q, want %q", got, first)
	}
	checkBrokerGroup(t, env, "sarama-billing", 10)
	second := produceParts(t, env, 4, "t")
	if got := saramaConsume(t, env, "sarama-billing", 4, time.Second); !slices.Equal(got, second) {
		t.Fatalf("a new sarama consumer of the group consumed %q, want only the new %q", got, second)
	}
	checkBrokerGroup(t, env, "sarama-billing", 14)
}

// The python group consumers: subscribe to orders in a group, read n
// records (then linger briefly to catch any extra), commit, close; print
// "<topic> <value>" per record.
const confluentGroupScript = `
import sys, time
from confluent_kafka import Consumer

boot, user, pw, group, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
c = Consumer({"bootstrap.servers": boot, "security.protocol": "SASL_PLAINTEXT",
              "sasl.mechanisms": "PLAIN", "sasl.username": user, "sasl.password": pw,
              "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False,
              "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
c.subscribe(["orders"])
got = []
deadline = time.time() + 20
linger = None
while time.time() < deadline:
    if len(got) >= n:
        linger = linger or time.time() + 1.0
        if time.time() > linger:
            break
    m = c.poll(0.2)
    if m is None:
        continue
    if m.error():
        print("consume error:", m.error(), file=sys.stderr)
        continue
    got.append(m)
if got:
    c.commit(asynchronous=False)
for m in got:
    print(m.topic(), m.value().decode())
c.close()
`

const kafkaPythonGroupScript = `
import sys, time
from kafka import KafkaConsumer

boot, user, pw, group, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
c = KafkaConsumer("orders", bootstrap_servers=boot, security_protocol="SASL_PLAINTEXT",
                  sasl_mechanism="PLAIN", sasl_plain_username=user, sasl_plain_password=pw,
                  group_id=group, auto_offset_reset="earliest", enable_auto_commit=False,
                  session_timeout_ms=6000, heartbeat_interval_ms=500,
                  request_timeout_ms=20000, api_version=(2, 5, 0))
got = []
deadline = time.time() + 20
linger = None
while time.time() < deadline:
    if len(got) >= n:
        linger = linger or time.time() + 1.0
        if time.time() > linger:
            break
    for tp, recs in c.poll(timeout_ms=200).items():
        got.extend(recs)
if got:
    c.commit()
for r in got:
    print(r.topic, r.value.decode())
c.close()
`

// runPythonGroup runs a group script and returns the values it read, sorted.
func runPythonGroup(t *testing.T, env *testEnv, script, group string, n int) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "group.py")
	must(t, os.WriteFile(path, []byte(script), 0o600))
	stdout, stderr, err := runExt(t, 30*time.Second, "", "/usr/bin/python3", path, env.boot, "acme-app", env.keys["acme-app"], group, fmt.Sprint(n))
	if err != nil {
		t.Fatalf("python group consumer: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, tail(stderr, 4000))
	}
	var vals []string
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if l == "" {
			continue
		}
		f := strings.Fields(l)
		if len(f) != 2 || f[0] != "orders" {
			t.Fatalf("bad line %q (want the short topic name)\n%s", l, stdout)
		}
		vals = append(vals, f[1])
	}
	sort.Strings(vals)
	return vals
}

func testPythonGroup(t *testing.T, script, group string) {
	env := newTestEnv(t, "")
	first := produceParts(t, env, 10, "p")
	sort.Strings(first)
	if got := runPythonGroup(t, env, script, group, 10); !slices.Equal(got, first) {
		t.Fatalf("consumed %q, want %q", got, first)
	}
	checkBrokerGroup(t, env, group, 10)
	second := produceParts(t, env, 4, "q")
	if got := runPythonGroup(t, env, script, group, 4); !slices.Equal(got, second) {
		t.Fatalf("a new consumer of the group consumed %q, want only the new %q", got, second)
	}
	checkBrokerGroup(t, env, group, 14)
}

// confluent-kafka-python (librdkafka 2.0.2) in a group through the gateway.
func TestPythonConfluentGroup(t *testing.T) {
	needPython(t, "confluent_kafka")
	testPythonGroup(t, confluentGroupScript, "py-confluent")
}

// kafka-python 2.0.2 in a group through the gateway (api_version 2.5.0).
func TestPythonKafkaPythonGroup(t *testing.T) {
	needPython(t, "kafka")
	testPythonGroup(t, kafkaPythonGroupScript, "py-kafka")
}
