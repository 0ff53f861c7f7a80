package engine

// End-to-end tests with the Java client (org.apache.kafka:kafka-clients, the
// version of the broker: bench/kafka/pom.xml) through the gateway: the
// program in interop/java, built by scripts/build-java-client.sh. Each test
// checks what a user of the Java client sees: an idempotent producer's
// records arrive once and in order; a consumer group resumes from its
// committed offsets; a read_committed consumer sees only committed
// transactions; AdminClient.listTopics shows only the tenant's topics.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The Java program's exit codes (interop/java: dev.flexway.interop.Main).
const (
	javaExitUnsupported = 3 // the gateway does not announce an API the command needs
	javaExitTimeout     = 4
)

var javaBuild struct {
	once sync.Once
	cp   string
	err  error
}

// needJava returns the Java client's classpath, building it once per test
// process (cached across processes by the script). Without a JDK or Maven
// it skips, or under CI fails.
func needJava(t *testing.T) string {
	t.Helper()
	for _, bin := range []string{"java", "javac", "mvn"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s missing (a JDK 17+ and Maven: scripts/install-deps.sh): %v", bin, err)
			}
			t.Skipf("%s missing; the Java client needs a JDK 17+ and Maven (scripts/install-deps.sh)", bin)
		}
	}
	javaBuild.once.Do(func() {
		root, err := filepath.Abs("..")
		if err != nil {
			javaBuild.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "build-java-client.sh"), "--print-classpath")
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil {
			javaBuild.err = fmt.Errorf("scripts/build-java-client.sh: %v\n%s", err, e.String())
			return
		}
		lines := strings.Split(strings.TrimSpace(o.String()), "\n")
		javaBuild.cp = lines[len(lines)-1]
	})
	if javaBuild.err != nil {
		t.Fatal(javaBuild.err)
	}
	return javaBuild.cp
}

// javaRun is one run of the Java client.
type javaRun struct {
	stdout, stderr string
	code           int
}

// lines returns stdout's lines starting with word, split in fields.
func (r javaRun) lines(word string) [][]string {
	var out [][]string
	for _, l := range strings.Split(r.stdout, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == word {
			out = append(out, f)
		}
	}
	return out
}

func (r javaRun) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, tail(r.stdout, 4000), tail(r.stderr, 6000))
}

// runJava runs a command of the Java client through the gateway as key id.
func runJava(t *testing.T, env *testEnv, id, command string, args ...string) javaRun {
	t.Helper()
	cp := needJava(t)
	const timeoutMs = 30000
	ctx, cancel := context.WithTimeout(context.Background(), timeoutMs*time.Millisecond+30*time.Second)
	defer cancel()
	argv := append([]string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
		"-cp", cp, "dev.flexway.interop.Main", command,
		"--bootstrap", env.boot, "--user", id, "--password", env.keys[id],
		"--timeout-ms", strconv.Itoa(timeoutMs)}, args...)
	cmd := exec.CommandContext(ctx, "java", argv...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	r := javaRun{stdout: o.String(), stderr: e.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		r.code = ee.ExitCode()
	default:
		t.Fatalf("java %s: %v (after %v)\n%s", command, err, time.Since(start), r)
	}
	if testing.Verbose() {
		t.Logf("java %s as %s: exit %d in %v\nstderr:\n%s", command, id, r.code, time.Since(start).Round(time.Millisecond), tail(r.stderr, 3000))
	}
	return r
}

// mustJava fails the test unless the run succeeded. A command that needs
// APIs the gateway does not announce yet (needs, by key) skips, and only
// then: the Java client said so (exit 3, UnsupportedVersionException) and
// the gateway's ApiVersions indeed lacks one of them.
func mustJava(t *testing.T, env *testEnv, r javaRun, what string, needs ...int16) {
	t.Helper()
	if r.code == 0 {
		return
	}
	if r.code == javaExitUnsupported && len(needs) > 0 {
		if missing := env.unannounced(needs...); len(missing) > 0 {
			msg := ""
			for _, l := range strings.Split(r.stderr, "\n") {
				if strings.HasPrefix(l, "UNSUPPORTED_API:") {
					msg = l
				}
			}
			t.Skipf("waiting for the decision table (issue 3): %s (the gateway does not announce %s)", msg, strings.Join(missing, ", "))
		}
	}
	if r.code == javaExitTimeout {
		t.Fatalf("java %s did not finish in time\n%s", what, r)
	}
	t.Fatalf("java %s failed\n%s", what, r)
}

// unannounced returns the names of the keys the gateway's ApiVersions does not announce.
func (env *testEnv) unannounced(keys ...int16) []string {
	env.t.Helper()
	r := dialPlain(env.t, env.boot)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "flexway-test", "1"
	r.send(req)
	var resp kmsg.ApiVersionsResponse
	resp.Version = 3
	r.recv(&resp)
	got := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = true
	}
	var missing []string
	for _, k := range keys {
		if !got[k] {
			missing = append(missing, kmsg.NameForKey(k))
		}
	}
	return missing
}

// The APIs a classic consumer group and a transactional producer need.
var (
	groupAPIs = []int16{10, 11, 12, 13, 14, 8, 9} // FindCoordinator, JoinGroup, Heartbeat, LeaveGroup, SyncGroup, OffsetCommit, OffsetFetch
	txnAPIs   = []int16{10, 22, 24, 26}           // FindCoordinator, InitProducerId, AddPartitionsToTxn, EndTxn
)

// javaRec is a "rec TOPIC PARTITION OFFSET KEY VALUE" or "sent PARTITION OFFSET KEY VALUE" line.
type javaRec struct {
	topic     string
	partition int32
	offset    int64
	key, val  string
}

func parseJavaRecs(t *testing.T, r javaRun, word string) []javaRec {
	t.Helper()
	var out []javaRec
	for _, f := range r.lines(word) {
		if word == "sent" {
			f = append([]string{f[0], "orders"}, f[1:]...)
		}
		if len(f) != 6 {
			t.Fatalf("bad java output line %q\n%s", strings.Join(f, " "), r)
		}
		p, err1 := strconv.ParseInt(f[2], 10, 32)
		o, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad java output line %q", strings.Join(f, " "))
		}
		out = append(out, javaRec{topic: f[1], partition: int32(p), offset: o, key: f[4], val: f[5]})
	}
	return out
}

// checkOncePerPartitionOrder: each value once, offsets increasing per partition, the short topic name.
func checkOncePerPartitionOrder(t *testing.T, recs []javaRec) {
	t.Helper()
	seen := map[string]bool{}
	last := map[int32]int64{}
	for _, r := range recs {
		if r.topic != "orders" {
			t.Fatalf("record under topic %q, want the short name orders", r.topic)
		}
		if seen[r.val] {
			t.Fatalf("record %s twice", r.val)
		}
		seen[r.val] = true
		if o, ok := last[r.partition]; ok && r.offset <= o {
			t.Fatalf("partition %d: offset %d after %d", r.partition, r.offset, o)
		}
		last[r.partition] = r.offset
	}
}

// I1, N1, D4, D7: the Java idempotent producer (acks=all, 5 in flight)
// produces through the gateway; every record lands once, at the offset the
// client was told, in send order per partition, under the physical name,
// with a producer id (InitProducerId served).
func TestJavaProduceIdempotent(t *testing.T) {
	env := newTestEnv(t, "")
	const n = 50
	r := runJava(t, env, "acme-app", "produce", "--count", strconv.Itoa(n), "--prefix", "jidem")
	mustJava(t, env, r, "produce")
	sent := parseJavaRecs(t, r, "sent")
	if len(sent) != n || len(r.lines("produced")) != 1 {
		t.Fatalf("java reported %d records sent, want %d\n%s", len(sent), n, r)
	}
	checkOncePerPartitionOrder(t, sent) // in send order: offsets increase per partition
	at := map[string]string{}           // "partition/offset" -> value, as the client was told
	for _, s := range sent {
		at[fmt.Sprintf("%d/%d", s.partition, s.offset)] = s.val
	}

	got := directValues(t, env, env.phys("acme", "orders"), n, 15*time.Second)
	if len(got) != n {
		t.Fatalf("the broker's %s holds %d records, want %d", env.phys("acme", "orders"), len(got), n)
	}
	for _, rec := range got {
		where := fmt.Sprintf("%d/%d", rec.Partition, rec.Offset)
		if at[where] != string(rec.Value) {
			t.Fatalf("the broker holds %q at %s, the client was told %q", rec.Value, where, at[where])
		}
		if rec.ProducerID < 0 {
			t.Fatalf("record %q without a producer id: not idempotent", rec.Value)
		}
	}

	// Read back through the gateway under the short name.
	cons := env.client("acme-app", kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if back := consumeAll(t, cons, n, 15*time.Second); len(back) != n {
		t.Fatalf("read back %d records through the gateway, want %d", len(back), n)
	}
}

// I1, N1, D6: a Java consumer group (classic protocol) reads part of the
// topic and commits; the next member of the group resumes at the
// committed offsets and reads the rest, once. The broker holds the group
// under its physical name only, and another tenant's group of the same
// name is its own.
func TestJavaConsumeGroup(t *testing.T) {
	env := newTestEnv(t, "")
	const n, first = 20, 8
	produceN(t, env.client("acme-app"), "orders", n, "jgrp")

	r1 := runJava(t, env, "acme-app", "consume-group", "--group", "billing", "--count", strconv.Itoa(first))
	mustJava(t, env, r1, "consume-group (first member)", groupAPIs...)
	r2 := runJava(t, env, "acme-app", "consume-group", "--group", "billing", "--count", strconv.Itoa(n-first))
	mustJava(t, env, r2, "consume-group (second member)", groupAPIs...)

	recs1, recs2 := parseJavaRecs(t, r1, "rec"), parseJavaRecs(t, r2, "rec")
	if len(recs1) != first || len(recs2) != n-first {
		t.Fatalf("the members read %d and %d records, want %d and %d\n%s\n%s", len(recs1), len(recs2), first, n-first, r1, r2)
	}
	checkOncePerPartitionOrder(t, append(append([]javaRec{}, recs1...), recs2...))
	// The first member's commits are where the second one starts.
	committed := map[int32]int64{}
	for _, f := range r1.lines("committed") {
		p, _ := strconv.ParseInt(f[1], 10, 32)
		o, _ := strconv.ParseInt(f[2], 10, 64)
		committed[int32(p)] = o
	}
	started := map[int32]bool{}
	for _, rec := range recs2 {
		if !started[rec.partition] {
			started[rec.partition] = true
			if rec.offset != committed[rec.partition] {
				t.Fatalf("the second member starts partition %d at offset %d, the group committed %d", rec.partition, rec.offset, committed[rec.partition])
			}
		}
	}
	for _, rec := range recs1 {
		if !strings.HasPrefix(rec.val, "jgrp-") {
			t.Fatalf("unexpected record %q", rec.val)
		}
	}

	// The broker: the group's offsets under the physical name, nothing under the short one.
	adm := kadm.NewClient(env.directClient())
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(ctx, env.group("acme", "billing"))
	if err != nil {
		t.Fatalf("fetch the offsets of %s on the broker: %v", env.group("acme", "billing"), err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic != env.phys("acme", "orders") {
			t.Fatalf("group %s has offsets for topic %q", env.group("acme", "billing"), o.Topic)
		}
		sum += o.At
	})
	if sum != n {
		t.Fatalf("group %s committed offsets summing to %d on the broker, want %d", env.group("acme", "billing"), sum, n)
	}
	// (The broker is shared on a real Kafka: only this env's topic tells a leak.)
	if short, err := adm.FetchOffsets(ctx, "billing"); err == nil {
		short.Each(func(o kadm.OffsetResponse) {
			if o.Topic == env.phys("acme", "orders") {
				t.Fatalf("the broker holds offsets of group billing (the short name) for %s", o.Topic)
			}
		})
	}

	// globex's group billing is its own: it reads globex's records from the start.
	produceN(t, env.client("globex-app"), "orders", 3, "gx")
	r3 := runJava(t, env, "globex-app", "consume-group", "--group", "billing", "--count", "3")
	mustJava(t, env, r3, "consume-group (globex)", groupAPIs...)
	recs3 := parseJavaRecs(t, r3, "rec")
	if len(recs3) != 3 {
		t.Fatalf("globex's billing read %d records, want its 3\n%s", len(recs3), r3)
	}
	for _, rec := range recs3 {
		if !strings.HasPrefix(rec.val, "gx-") {
			t.Fatalf("globex's group read %q", rec.val)
		}
	}
}

// I1, N1, D8: a Java transactional producer commits one transaction and
// aborts another; a read_committed consumer through the gateway sees the
// committed records only, though the broker holds both. The transactional
// id is the physical one on the broker.
func TestJavaTransaction(t *testing.T) {
	env := newTestEnv(t, "")
	const n = 5
	r := runJava(t, env, "acme-app", "txn", "--txn-id", "pay-1", "--count", strconv.Itoa(n), "--prefix", "jtx")
	mustJava(t, env, r, "txn", txnAPIs...)
	if len(r.lines("committed")) != 1 || len(r.lines("aborted")) != 1 {
		t.Fatalf("the transactions did not both end\n%s", r)
	}
	recs := parseJavaRecs(t, r, "rec")
	checkOncePerPartitionOrder(t, recs)
	var vals []string
	for _, rec := range recs {
		vals = append(vals, rec.val)
		if !strings.HasPrefix(rec.val, "jtx-committed-") {
			t.Fatalf("the read_committed consumer saw %q\n%s", rec.val, r)
		}
	}
	if len(recs) != n {
		t.Fatalf("the read_committed consumer saw %d records %v, want the %d committed ones", len(recs), vals, n)
	}

	// The broker holds the aborted records too (read_uncommitted shows them).
	got := directValues(t, env, env.phys("acme", "orders"), 2*n, 15*time.Second)
	aborted := 0
	for _, rec := range got {
		if strings.HasPrefix(string(rec.Value), "jtx-aborted-") {
			aborted++
		}
	}
	if len(got) != 2*n || aborted != n {
		t.Fatalf("the broker holds %d records (%d aborted), want %d (%d aborted)", len(got), aborted, 2*n, n)
	}

	// The transactional id on the broker is the physical one.
	adm := kadm.NewClient(env.directClient())
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	txns, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Fatalf("list transactions on the broker: %v", err)
	}
	if _, ok := txns[env.txn("acme", "pay-1")]; !ok {
		t.Fatalf("the broker has no transactional id %s: %v", env.txn("acme", "pay-1"), txns.TransactionalIDs())
	}
	if _, ok := txns["pay-1"]; ok {
		t.Fatal("the broker has the transactional id under the short name pay-1")
	}
}

// N2, D3: AdminClient.listTopics (internal topics included) shows a
// tenant its own topics by short name and nothing else: acme-app both of
// its channels, globex-app its one; never a physical or internal name.
func TestJavaAdminListTopics(t *testing.T) {
	env := newTestEnv(t, "")
	// Give the broker something to hide: records in every tenant's topic.
	produceN(t, env.client("acme-app"), "orders", 1, "a")
	produceN(t, env.client("globex-app"), "orders", 1, "g")
	for _, c := range []struct{ id, want string }{
		{"acme-app", "orders,payments"},
		{"globex-app", "orders"},
	} {
		r := runJava(t, env, c.id, "admin-list")
		mustJava(t, env, r, "admin-list as "+c.id)
		names := strings.Fields(r.stdout)
		sort.Strings(names)
		if strings.Join(names, ",") != c.want {
			t.Fatalf("AdminClient.listTopics as %s shows %v, want [%s]\n%s", c.id, names, strings.ReplaceAll(c.want, ",", " "), r)
		}
	}
}
