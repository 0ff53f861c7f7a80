package engine

// End-to-end tests with real third-party clients through the gateway:
// kcat (librdkafka 2.0.2), kafka-python 2.0.2 and confluent-kafka-python
// (librdkafka 2.0.2). They prove the gateway serves clients it was not
// written against: SASL PLAIN over SASL_PLAINTEXT (I1), including the
// legacy SaslHandshake v0 + raw bytes framing (I5), topic renaming (N1),
// Metadata rewriting (D3), Produce authorization and acks (D4) and Fetch (D5).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// needBin skips (or, under CI, fails) when an external client is missing:
// `make test` installs it via scripts/install-deps.sh.
func needBin(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing (scripts/install-deps.sh installs it): %v", path, err)
		}
		t.Skipf("%s missing; run scripts/install-deps.sh", path)
	}
}

// needPython checks that /usr/bin/python3 can import module.
func needPython(t *testing.T, module string) {
	t.Helper()
	needBin(t, "/usr/bin/python3")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "/usr/bin/python3", "-c", "import "+module).CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3 module %s missing (scripts/install-deps.sh installs it): %v\n%s", module, err, out)
		}
		t.Skipf("python3 module %s missing; run scripts/install-deps.sh: %s", module, out)
	}
}

// runExt runs an external client with a timeout (30 s max), stdin as given.
func runExt(t *testing.T, d time.Duration, stdin string, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return runExtR(t, d, strings.NewReader(stdin), name, args...)
}

// runExtR is runExt with stdin as a reader (a pipe keeps the client alive).
func runExtR(t *testing.T, d time.Duration, stdin io.Reader, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	if d > 30*time.Second {
		d = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = stdin
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s timed out after %v: %w", name, d, err)
	}
	return o.String(), e.String(), err
}

// kcatArgs: SASL PLAIN over SASL_PLAINTEXT through the gateway as key id.
func (env *testEnv) kcatArgs(id string, args ...string) []string {
	base := []string{
		"-b", env.boot,
		"-X", "security.protocol=SASL_PLAINTEXT",
		"-X", "sasl.mechanisms=PLAIN",
		"-X", "sasl.username=" + id,
		"-X", "sasl.password=" + env.keys[id],
	}
	return append(base, args...)
}

// directValues reads the broker's physical topic until n records (or the timeout).
func directValues(t *testing.T, env *testEnv, topic string, n int, d time.Duration) []*kgo.Record {
	t.Helper()
	direct := env.directClient(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	return consumeAll(t, direct, n, d)
}

// I1, N1, D4, D5: kcat produces with acks=all/1 and every compression
// codec, consumes back through the gateway under the short name; the
// broker holds acme.orders. (kcat with acks=0: TestKcatAcks0ThenExit.)
func TestKcatProduceConsume(t *testing.T) {
	needBin(t, "/usr/bin/kcat")
	env := newTestEnv(t, "")
	want := kcatProduceCases(t, env, 20)
	total := len(want)

	// N1: the broker holds them under the physical name.
	got := directValues(t, env, env.phys("acme", "orders"), total, 15*time.Second)
	held := map[string]int{}
	for _, r := range got {
		if !want[string(r.Value)] {
			t.Fatalf("unexpected record %q in acme.orders", r.Value)
		}
		v := string(r.Value)
		held[v[:strings.LastIndexByte(v, '-')]]++
	}
	if len(got) != total {
		t.Fatalf("the broker's acme.orders holds %d records, want %d; per case: %v", len(got), total, held)
	}

	// D5: consume everything back with kcat through the gateway.
	args := env.kcatArgs("acme-app", "-C", "-t", "orders", "-o", "beginning", "-e", "-f", "%t %p %o %k %s\n")
	stdout, stderr, err := runExt(t, 30*time.Second, "", "/usr/bin/kcat", args...)
	if err != nil {
		t.Fatalf("kcat consume: %v\nstderr:\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != total {
		t.Fatalf("kcat consumed %d records, want %d\nstdout:\n%s\nstderr:\n%s", len(lines), total, stdout, stderr)
	}
	checkKcatConsumed(t, lines, want)
}

// kcatProduceCases has kcat produce n keyed records "<case>-<i>" to orders
// as acme-app in each case: acks=all, acks=1, and each compression codec.
// It returns the values produced.
func kcatProduceCases(t *testing.T, env *testEnv, n int) map[string]bool {
	cases := []struct {
		name string
		args []string
	}{
		{"acks-all", []string{"-X", "acks=all"}},
		{"acks-1", []string{"-X", "acks=1"}},
		{"gzip", []string{"-z", "gzip"}},
		{"snappy", []string{"-z", "snappy"}},
		{"lz4", []string{"-z", "lz4"}},
		{"zstd", []string{"-z", "zstd"}},
	}
	want := map[string]bool{}
	for _, c := range cases {
		var in strings.Builder
		for i := 0; i < n; i++ {
			// Keyed: one key's records share a partition, so their
			// sequence numbers must come back increasing.
			v := fmt.Sprintf("%s-%d", c.name, i)
			fmt.Fprintf(&in, "k%d:%s\n", i%4, v)
			want[v] = true
		}
		args := env.kcatArgs("acme-app", append([]string{"-P", "-t", "orders", "-K", ":", "-X", "message.timeout.ms=15000"}, c.args...)...)
		if _, stderr, err := runExt(t, 30*time.Second, in.String(), "/usr/bin/kcat", args...); err != nil {
			t.Fatalf("kcat produce %s: %v\nstderr:\n%s", c.name, err, stderr)
		}
	}
	return want
}

// checkKcatConsumed checks the lines kcat consumed ("%t %p %o %k %s"):
// each under the short name orders, each of want once, the offsets of a
// partition increasing, and so the sequence numbers of each case's key.
func checkKcatConsumed(t *testing.T, lines []string, want map[string]bool) {
	seen := map[string]bool{}
	lastOff := map[string]int64{}
	lastSeq := map[string]int{} // case/key -> last sequence number
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 5 {
			t.Fatalf("bad kcat line %q", l)
		}
		topic, part, key, val := f[0], f[1], f[3], f[4]
		off, _ := strconv.ParseInt(f[2], 10, 64)
		if topic != "orders" {
			t.Fatalf("record reported under topic %q, want the short name orders", topic)
		}
		if !want[val] {
			t.Fatalf("unexpected record %q", val)
		}
		if seen[val] {
			t.Fatalf("record %q twice", val)
		}
		seen[val] = true
		if o, ok := lastOff[part]; ok && off <= o {
			t.Fatalf("offsets out of order on partition %s: %d after %d", part, off, o)
		}
		lastOff[part] = off
		i := strings.LastIndexByte(val, '-')
		seq, _ := strconv.Atoi(val[i+1:])
		ck := val[:i] + "/" + key
		if s, ok := lastSeq[ck]; ok && seq <= s {
			t.Fatalf("key %s of %s out of order: %d after %d", key, val[:i], seq, s)
		}
		lastSeq[ck] = seq
	}
}

// D4: acks=0 records a client wrote before closing its connection still
// reach the broker (as with a real broker, which handles what it has read).
// kcat -P with acks=0 exits as soon as its Produce is written.
func TestKcatAcks0ThenExit(t *testing.T) {
	needBin(t, "/usr/bin/kcat")
	env := newTestEnv(t, "")
	const runs, n = 5, 10
	for r := 0; r < runs; r++ {
		var in strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&in, "run%d-%d\n", r, i)
		}
		args := env.kcatArgs("acme-app", "-P", "-t", "orders", "-p", "0", "-X", "acks=0")
		if _, stderr, err := runExt(t, 30*time.Second, in.String(), "/usr/bin/kcat", args...); err != nil {
			t.Fatalf("kcat produce acks=0: %v\nstderr:\n%s", err, stderr)
		}
	}
	// Until all are there (a lost record never comes): the gateway forwards
	// the last run's records once its broker dial ends, slower over SASL_SSL.
	got := directValues(t, env, env.phys("acme", "orders"), runs*n, 15*time.Second)
	if len(got) != runs*n {
		held := map[string]int{}
		for _, rec := range got {
			v := string(rec.Value)
			held[v[:strings.IndexByte(v, '-')]]++
		}
		t.Fatalf("acks=0 records written just before the client closed are lost: the broker's acme.orders holds %d of %d (per kcat run: %v)", len(got), runs*n, held)
	}
}

// D3: kcat -L lists only the identity's topics by short name, and the
// brokers at 127.0.0.1 on the gateway's fallback ports.
func TestKcatMetadata(t *testing.T) {
	needBin(t, "/usr/bin/kcat")
	env := newTestEnv(t, "")
	// Create the physical topics so the broker has something to hide.
	produceN(t, env.client("acme-app"), "orders", 1, "x")
	produceN(t, env.client("globex-app"), "orders", 1, "y")

	stdout, stderr, err := runExt(t, 30*time.Second, "", "/usr/bin/kcat", env.kcatArgs("acme-app", "-L", "-J")...)
	if err != nil {
		t.Fatalf("kcat -L: %v\nstderr:\n%s", err, stderr)
	}
	var md struct {
		Brokers []struct {
			ID   int32  `json:"id"`
			Name string `json:"name"`
		} `json:"brokers"`
		Topics []struct {
			Topic string `json:"topic"`
		} `json:"topics"`
	}
	if err := json.Unmarshal([]byte(stdout), &md); err != nil {
		t.Fatalf("kcat -L -J output: %v\n%s", err, stdout)
	}
	var names []string
	for _, tp := range md.Topics {
		names = append(names, tp.Topic)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "orders,payments" {
		t.Fatalf("kcat -L lists %v for acme-app, want [orders payments]\n%s", names, stdout)
	}
	_, bootPort, _ := strings.Cut(env.boot, ":")
	base, _ := strconv.Atoi(bootPort)
	if len(md.Brokers) == 0 {
		t.Fatalf("no brokers listed\n%s", stdout)
	}
	for _, b := range md.Brokers {
		host, ps, _ := strings.Cut(b.Name, ":")
		p, _ := strconv.Atoi(ps)
		if host != "127.0.0.1" || p < base || p > base+3 {
			t.Fatalf("broker %d announced at %s, want 127.0.0.1 on %d..%d", b.ID, b.Name, base, base+3)
		}
		for _, d := range env.direct {
			if b.Name == d {
				t.Fatalf("broker %d announced at the upstream's own address %s", b.ID, d)
			}
		}
	}
}

// D4: kcat producing as a key without a send operation is refused with a
// topic authorization error, and nothing reaches the broker.
func TestKcatProduceRefused(t *testing.T) {
	needBin(t, "/usr/bin/kcat")
	env := newTestEnv(t, "")
	args := env.kcatArgs("acme-orders-reader", "-P", "-t", "orders", "-X", "message.timeout.ms=10000")
	_, stderr, err := runExt(t, 30*time.Second, "nope-1\nnope-2\n", "/usr/bin/kcat", args...)
	if err == nil {
		t.Fatalf("kcat produce as acme-orders-reader succeeded\nstderr:\n%s", stderr)
	}
	if !strings.Contains(strings.ToLower(stderr), "authorization") {
		t.Fatalf("kcat produce refused without an authorization error: %v\nstderr:\n%s", err, stderr)
	}
	if got := directValues(t, env, env.phys("acme", "orders"), 1, 2*time.Second); len(got) != 0 {
		t.Fatalf("a refused produce reached the broker: %d records", len(got))
	}
}

const kafkaPythonScript = `
import sys, time, logging, os
if os.environ.get("FLEXWAY_PYDEBUG"):
    logging.basicConfig(level=logging.DEBUG)
from kafka import KafkaProducer, KafkaConsumer, TopicPartition

boot, user, pw, ver = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
common = dict(bootstrap_servers=boot, security_protocol="SASL_PLAINTEXT",
              sasl_mechanism="PLAIN", sasl_plain_username=user,
              sasl_plain_password=pw, request_timeout_ms=20000)
if ver != "auto":
    common["api_version"] = tuple(int(x) for x in ver.split("."))

p = KafkaProducer(acks="all", **common)
for i in range(10):
    p.send("orders", key=b"k%d" % (i % 3), value=b"py-%d" % i).get(timeout=15)
p.flush(timeout=15)
p.close(timeout=5)

c = KafkaConsumer(group_id=None, enable_auto_commit=False, **common)
parts = c.partitions_for_topic("orders")
if not parts:
    sys.exit("no partitions for orders: %r" % (parts,))
tps = [TopicPartition("orders", x) for x in sorted(parts)]
c.assign(tps)
c.seek_to_beginning(*tps)
got = []
deadline = time.time() + 20
while len(got) < 10 and time.time() < deadline:
    for tp, recs in c.poll(timeout_ms=500).items():
        got.extend(recs)
for r in got:
    print(r.topic, r.partition, r.offset, r.key.decode(), r.value.decode())
c.close()
`

const confluentScript = `
import sys, time
from confluent_kafka import Producer, Consumer, TopicPartition, OFFSET_BEGINNING

boot, user, pw = sys.argv[1], sys.argv[2], sys.argv[3]
common = {"bootstrap.servers": boot, "security.protocol": "SASL_PLAINTEXT",
          "sasl.mechanisms": "PLAIN", "sasl.username": user, "sasl.password": pw}

errs = []
def dr(err, msg):
    if err is not None:
        errs.append(str(err))
p = Producer(dict(common, **{"acks": "all", "message.timeout.ms": 15000}))
for i in range(10):
    p.produce("orders", key=b"k%d" % (i % 3), value=b"ck-%d" % i, on_delivery=dr)
left = p.flush(20)
if left or errs:
    sys.exit("produce: %d undelivered, errors %r" % (left, errs))

c = Consumer(dict(common, **{"group.id": "flexway-e2e", "enable.auto.commit": False,
                             "enable.auto.offset.store": False}))
md = c.list_topics("orders", timeout=10)
parts = sorted(md.topics["orders"].partitions.keys())
c.assign([TopicPartition("orders", x, OFFSET_BEGINNING) for x in parts])
got = []
deadline = time.time() + 20
while len(got) < 10 and time.time() < deadline:
    m = c.poll(0.5)
    if m is None:
        continue
    if m.error():
        print("consume error:", m.error(), file=sys.stderr)
        continue
    got.append(m)
for m in got:
    print(m.topic(), m.partition(), m.offset(), m.key().decode(), m.value().decode())
c.close()
`

// checkPythonOutput: 10 records "orders <p> <off> <key> <prefix>-<i>",
// each once, in order per partition and per key; the broker holds them
// under acme.orders.
func checkPythonOutput(t *testing.T, env *testEnv, stdout, prefix string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 10 {
		t.Fatalf("consumed %d records, want 10\n%s", len(lines), stdout)
	}
	seen := map[string]bool{}
	lastOff := map[string]int64{}
	lastSeq := map[string]int{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 5 || f[0] != "orders" || !strings.HasPrefix(f[4], prefix+"-") {
			t.Fatalf("bad record line %q (want topic orders, value %s-<i>)", l, prefix)
		}
		if seen[f[4]] {
			t.Fatalf("record %s twice", f[4])
		}
		seen[f[4]] = true
		off, _ := strconv.ParseInt(f[2], 10, 64)
		if o, ok := lastOff[f[1]]; ok && off <= o {
			t.Fatalf("offsets out of order on partition %s", f[1])
		}
		lastOff[f[1]] = off
		seq, _ := strconv.Atoi(strings.TrimPrefix(f[4], prefix+"-"))
		if s, ok := lastSeq[f[3]]; ok && seq <= s {
			t.Fatalf("key %s out of order: %d after %d", f[3], seq, s)
		}
		lastSeq[f[3]] = seq
	}
	got := directValues(t, env, env.phys("acme", "orders"), 10, 10*time.Second)
	if len(got) != 10 {
		t.Fatalf("the broker's acme.orders holds %d records, want 10", len(got))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func runPython(t *testing.T, env *testEnv, script string, extra ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "client.py")
	must(t, os.WriteFile(path, []byte(script), 0o600))
	args := append([]string{path, env.boot, "acme-app", env.keys["acme-app"]}, extra...)
	stdout, stderr, err := runExt(t, 30*time.Second, "", "/usr/bin/python3", args...)
	if err != nil {
		t.Fatalf("python client: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if testing.Verbose() && stderr != "" {
		t.Logf("python stderr:\n%s", stderr)
	}
	return stdout
}

// I1, I5, N1, D4, D5: kafka-python 2.0.2 authenticates with SaslHandshake
// v0 followed by raw SASL bytes (the legacy framing), produces 10 records
// and reads them back by manual assignment.
func TestPythonKafkaPython(t *testing.T) {
	needPython(t, "kafka")
	// A fixed api_version skips kafka-python's probe, which sends Metadata
	// v0 without waiting for ApiVersions: the gateway announces Metadata
	// from v1 (seed 002) and closes on a version not announced, as a Kafka
	// 4 broker does. SASL is still SaslHandshake v0 plus raw bytes
	// (kafka-python 2.0.2 always uses the legacy framing).
	for _, ver := range []string{"2.5.0"} {
		t.Run("api_version="+ver, func(t *testing.T) {
			env := newTestEnv(t, "")
			out := runPython(t, env, kafkaPythonScript, ver)
			checkPythonOutput(t, env, out, "py")
		})
	}
}

// I1, N1, D4, D5: confluent-kafka-python produces 10 records and reads
// them back by manual assignment (group.id set, groups unused).
func TestPythonConfluentKafka(t *testing.T) {
	needPython(t, "confluent_kafka")
	env := newTestEnv(t, "")
	out := runPython(t, env, confluentScript)
	checkPythonOutput(t, env, out, "ck")
}
