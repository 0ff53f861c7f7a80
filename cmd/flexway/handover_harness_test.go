package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// upgraded is a gateway upgraded by handover, as the test plays systemd: the
// binary at a path of its own (replaced before each upgrade, as a package
// does), its log in files (a successor inherits them: a pipe would outlive
// the first process), NOTIFY_SOCKET set. Successors are not the test's
// children: they are followed by pid, from MAINPID=.
type upgraded struct {
	t        *testing.T
	bin, dir string
	logPath  string
	ns       *notifySocket
	first    *exec.Cmd
	reaped   chan struct{} // the first process's exit, reaped
	mu       sync.Mutex
	pids     []int // every process started, the first one first
}

// startUpgradable copies bin to a path of its own and starts it on dir's
// flexway.yaml under the notify socket ns; it waits for READY=1.
func startUpgradable(t *testing.T, bin, dir string, ns *notifySocket, env ...string) *upgraded {
	t.Helper()
	u := &upgraded{t: t, dir: dir, ns: ns, reaped: make(chan struct{}),
		bin: filepath.Join(t.TempDir(), "flexway"), logPath: filepath.Join(dir, "flexway.log")}
	u.install(bin)
	logf, err := os.Create(u.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	// As systemd does, WATCHDOG_PID is the pid of the process it starts:
	// the shell's, which exec keeps.
	u.first = exec.Command("/bin/sh", "-c", `WATCHDOG_PID=$$ exec "$0" "$@"`, u.bin, "-config", "flexway.yaml")
	u.first.Dir = dir
	u.first.Env = append(append(os.Environ(), "NOTIFY_SOCKET="+ns.path), env...)
	u.first.Stdout, u.first.Stderr = logf, logf
	if err := u.first.Start(); err != nil {
		t.Fatal(err)
	}
	u.pids = append(u.pids, u.first.Process.Pid)
	go func() { _ = u.first.Wait(); close(u.reaped) }()
	t.Cleanup(func() {
		for _, pid := range u.allPids() {
			if alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			t.Logf("flexway log:\n%s", tail(u.log(), 12000))
		}
	})
	u.waitState(0, "READY=1", 20*time.Second)
	return u
}

// install puts bin at the gateway's path as a package upgrade does: a new
// file renamed over the old one.
func (u *upgraded) install(bin string) {
	u.t.Helper()
	b, err := os.ReadFile(bin)
	if err != nil {
		u.t.Fatal(err)
	}
	if err := os.WriteFile(u.bin+".new", b, 0o755); err != nil {
		u.t.Fatal(err)
	}
	if err := os.Rename(u.bin+".new", u.bin); err != nil {
		u.t.Fatal(err)
	}
}

func (u *upgraded) allPids() []int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]int(nil), u.pids...)
}

// main is the pid systemd would hold as the main one.
func (u *upgraded) main() int {
	p := u.allPids()
	return p[len(p)-1]
}

func (u *upgraded) log() string {
	b, _ := os.ReadFile(u.logPath)
	return string(b)
}

// waitState waits until a notify message after the first from holds s;
// it returns the message and its index.
func (u *upgraded) waitState(from int, s string, within time.Duration) (string, int) {
	u.t.Helper()
	deadline := time.Now().Add(within)
	for {
		st := u.ns.states()
		for i := from; i < len(st); i++ {
			if strings.Contains(st[i], s) {
				return st[i], i
			}
		}
		if time.Now().After(deadline) {
			u.t.Fatalf("systemd was never told %q; told %q", s, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLog waits until the log holds s n times.
func (u *upgraded) waitLog(s string, n int, within time.Duration) {
	u.t.Helper()
	deadline := time.Now().Add(within)
	for strings.Count(u.log(), s) < n {
		if time.Now().After(deadline) {
			u.t.Fatalf("the log holds %q %d times, want %d", s, strings.Count(u.log(), s), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// upgrade replaces the binary, sends SIGUSR2 to the main process and
// waits for its successor's MAINPID= and READY=1 (one message), then for
// the old process's exit, which must come within shutdown; it returns the
// time the old process took to exit after its successor was ready.
func (u *upgraded) upgrade(bin string, shutdown time.Duration) time.Duration {
	u.t.Helper()
	u.install(bin)
	old, from := u.main(), len(u.ns.states())
	if err := syscall.Kill(old, syscall.SIGUSR2); err != nil {
		u.t.Fatal(err)
	}
	msg, _ := u.waitState(from, "MAINPID=", 40*time.Second)
	ready := time.Now()
	lines := strings.Split(msg, "\n")
	if len(lines) < 2 || lines[1] != "READY=1" {
		u.t.Fatalf("the new process told systemd %q: want MAINPID=<pid> then READY=1", msg)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(lines[0], "MAINPID="))
	if err != nil || pid == old || !alive(pid) {
		u.t.Fatalf("MAINPID %q: not a new live process (old %d)", lines[0], old)
	}
	u.mu.Lock()
	u.pids = append(u.pids, pid)
	u.mu.Unlock()
	for alive(old) {
		if time.Since(ready) > shutdown {
			u.t.Fatalf("the old process %d still runs %v after its successor was ready (shutdown_timeout %v)", old, time.Since(ready), shutdown)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if old == u.first.Process.Pid {
		<-u.reaped
		if code := u.first.ProcessState.ExitCode(); code != 0 {
			u.t.Fatalf("the first process exited %d after the handover", code)
		}
	}
	return time.Since(ready)
}

// alive reports whether pid runs (a zombie does not: the successors'
// parents exit, and nobody may reap them here).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// sigterm stops the main process as systemctl stop does and waits for it.
func (u *upgraded) sigterm() {
	u.t.Helper()
	pid := u.main()
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(30 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			u.t.Fatalf("flexway %d did not exit within 30 s of SIGTERM", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startDialer connects to each address every 10 ms until stopped
// (testkit.Dialer).
func startDialer(addrs ...string) *testkit.Dialer {
	return testkit.DialEvery(10*time.Millisecond, addrs...)
}

// groupReader reads orders in a consumer group through the gateway,
// counting each value read.
type groupReader struct {
	cl     *kgo.Client
	mu     sync.Mutex
	seen   map[string]int
	errs   []error
	cancel context.CancelFunc
	done   chan struct{}
}

func startGroupReader(t *testing.T, base int, key string) *groupReader {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", base)),
		kgo.SASL(plain.Auth{User: "acme-app", Pass: key}.AsMechanism()),
		kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("billing"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &groupReader{cl: cl, seen: map[string]int{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(g.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			g.mu.Lock()
			fs.EachError(func(_ string, _ int32, err error) {
				if ctx.Err() == nil {
					g.errs = append(g.errs, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) { g.seen[string(r.Value)]++ })
			g.mu.Unlock()
		}
	}()
	t.Cleanup(func() { g.cancel(); <-g.done; cl.Close() })
	return g
}

// waitPrefix waits until the group has read a value starting with prefix.
func (g *groupReader) waitPrefix(t *testing.T, prefix string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		g.mu.Lock()
		found := false
		for v := range g.seen {
			if strings.HasPrefix(v, prefix) {
				found = true
				break
			}
		}
		g.mu.Unlock()
		if found {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group read no record %s* in %v", prefix, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitRead waits until the group has read every value of acked.
func (g *groupReader) waitRead(t *testing.T, acked map[string]bool, within time.Duration) (dups int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		g.mu.Lock()
		missing := 0
		for v := range acked {
			if g.seen[v] == 0 {
				missing++
			}
		}
		dups = 0
		for _, n := range g.seen {
			dups += n - 1
		}
		g.mu.Unlock()
		if missing == 0 {
			return dups
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group has not read %d of %d acknowledged records", missing, len(acked))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// acmeAppKey is the quickstart's public demo key of acme-app.
func acmeAppKey(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../configs/quickstart/acme-app.key")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// httpOK asks the admin endpoint's /healthz.
func httpOK(t *testing.T, addr string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("admin endpoint: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("admin endpoint /healthz: %s", resp.Status)
	}
}

// refusedUpgrade sends SIGUSR2 and waits for the old process to say the
// upgrade failed and that it goes on serving, the reason holding why; the
// main process is still the same, systemd was told no MAINPID. It returns
// how long the failure took.
func (u *upgraded) refusedUpgrade(why string, n int, within time.Duration) time.Duration {
	u.t.Helper()
	old, from := u.main(), len(u.ns.states())
	start := time.Now()
	if err := syscall.Kill(old, syscall.SIGUSR2); err != nil {
		u.t.Fatal(err)
	}
	u.waitLog("flexway upgrade failed: this process goes on serving", n, within)
	took := time.Since(start)
	line := logLine(u.log()[strings.LastIndex(u.log(), `"msg":"flexway upgrade failed`)-40:], "flexway upgrade failed")
	if !strings.Contains(line, why) {
		u.t.Fatalf("the failure's line %q does not say %q", line, why)
	}
	if !alive(old) {
		u.t.Fatalf("the old process %d exited after a failed upgrade", old)
	}
	for _, s := range u.ns.states()[from:] {
		if strings.Contains(s, "MAINPID=") || strings.Contains(s, "STOPPING=1") {
			u.t.Fatalf("a failed upgrade told systemd %q", s)
		}
	}
	return took
}

// produceOne writes one record through the gateway at base.
func produceOne(t *testing.T, base int, key string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", base)),
		kgo.SASL(plain.Auth{User: "acme-orders-producer", Pass: key}.AsMechanism()), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after a failed upgrade")}).FirstErr(); err != nil {
		t.Fatalf("produce through the old process after a failed upgrade: %v", err)
	}
}

// twoClusterLines are the listener lines of WriteTwoUpstreams that serve
// the clusters named (shop on base and base+1, bank on base+2 and base+3).
func twoClusterLines(base int, shop, bank bool) string {
	s := "    plaintext:\n      mesh_only: true\n      bind_host: 127.0.0.1\n      advertised_host: 127.0.0.1\n      clusters:\n"
	if shop {
		s += fmt.Sprintf("        shop: { ports: { from: %d, to: %d }, first_node_id: 0 }\n", base, base+1)
	}
	if bank {
		s += fmt.Sprintf("        bank: { ports: { from: %d, to: %d }, first_node_id: 0 }\n", base+2, base+3)
	}
	return s
}

// writeClusters writes WriteTwoUpstreams's files; a cluster without
// ports in lines loses its channel and operation in the contract, and the
// key that operation (a cluster declared must be served).
func writeClusters(t *testing.T, dir, brokersA, brokersB, lines string) string {
	t.Helper()
	key := testkit.WriteTwoUpstreams(t, dir, brokersA, brokersB, lines)
	c := testkit.TwoUpstreamsContract
	part := func(from, to string) string { return c[strings.Index(c, from):strings.Index(c, to)] }
	orders, ledger := part("  orders:\n", "  ledger:\n"), part("  ledger:\n", "operations:\n")
	produceOrders, produceLedger := part("  produceOrders:\n", "  produceLedger:\n"), part("  produceLedger:\n", "components:\n")
	var ops []string
	if !strings.Contains(lines, "shop:") {
		c = strings.Replace(strings.Replace(c, orders, "", 1), produceOrders, "", 1)
	} else {
		ops = append(ops, "produceOrders")
	}
	if !strings.Contains(lines, "bank:") {
		c = strings.Replace(strings.Replace(c, ledger, "", 1), produceLedger, "", 1)
	} else {
		ops = append(ops, "produceLedger")
	}
	keys, _ := os.ReadFile(filepath.Join(dir, "api-keys.yaml"))
	writeTestFile(t, filepath.Join(dir, "asyncapi.yaml"), []byte(c))
	writeTestFile(t, filepath.Join(dir, "api-keys.yaml"),
		[]byte(strings.Replace(string(keys), "[produceOrders, produceLedger]", "["+strings.Join(ops, ", ")+"]", 1)))
	return key
}

// reloadTo rewrites the listener lines and sends SIGHUP; it waits for the
// n-th "configuration reloaded".
func (u *upgraded) reloadTo(dir, brokersA, brokersB, lines string, n int) {
	u.t.Helper()
	writeClusters(u.t, dir, brokersA, brokersB, lines)
	if err := syscall.Kill(u.main(), syscall.SIGHUP); err != nil {
		u.t.Fatal(err)
	}
	u.waitLog("configuration reloaded", n, 30*time.Second)
}

// refusedWithin waits until a dial to addr is refused.
func refusedWithin(t *testing.T, addr string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil && strings.Contains(err.Error(), "connection refused") {
			return
		}
		if c != nil {
			c.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still accepts connections (%v)", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// javaProducer is the interoperability suite's Java client (interop/java,
// built by scripts/build-java-client.sh) producing through the gateway:
// one process, one idempotent KafkaProducer (acks=all), for a whole test.
type javaProducer struct {
	cmd       *exec.Cmd
	out, errb syncBuffer
	done      chan struct{}
	count     int
	prefix    string
	exitErr   error
}

// startJavaProducer sends count records of value jv-<i>, pauseMs apart,
// through the gateway at base as acme-orders-producer; it skips without a
// JDK and Maven (outside CI).
func startJavaProducer(t *testing.T, base int, key string, count, pauseMs int) *javaProducer {
	t.Helper()
	for _, bin := range []string{"java", "javac", "mvn"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s missing (a JDK 17+ and Maven: scripts/install-deps.sh)", bin)
			}
			t.Skipf("%s missing: the Java producer needs a JDK 17+ and Maven", bin)
		}
	}
	out, err := exec.Command("../../scripts/build-java-client.sh", "--print-classpath").Output()
	if err != nil {
		t.Fatalf("scripts/build-java-client.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	j := &javaProducer{done: make(chan struct{}), count: count, prefix: "jv"}
	j.cmd = exec.Command("java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", lines[len(lines)-1],
		"dev.flexway.interop.Main", "produce", "--bootstrap", fmt.Sprintf("127.0.0.1:%d", base),
		"--user", "acme-orders-producer", "--password", key, "--topic", "orders", "--prefix", j.prefix,
		"--count", strconv.Itoa(count), "--pause-ms", strconv.Itoa(pauseMs), "--timeout-ms", "60000")
	j.cmd.Stdout, j.cmd.Stderr = &j.out, &j.errb
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { j.exitErr = j.cmd.Wait(); close(j.done) }()
	t.Cleanup(func() {
		select {
		case <-j.done:
		default:
			_ = j.cmd.Process.Kill()
			<-j.done
		}
	})
	return j
}

// running reports whether the Java producer is still sending.
func (j *javaProducer) running() bool {
	select {
	case <-j.done:
		return false
	default:
		return true
	}
}

// acked waits for the producer's end and returns the values the broker
// acknowledged to it; every record must have been.
func (j *javaProducer) acked(t *testing.T, within time.Duration) []string {
	t.Helper()
	select {
	case <-j.done:
	case <-time.After(within):
		t.Fatalf("the Java producer has not finished in %v", within)
	}
	if j.exitErr != nil {
		t.Fatalf("the Java producer: %v\nstdout:\n%s\nstderr:\n%s", j.exitErr, tail(j.out.String(), 2000), tail(j.errb.String(), 4000))
	}
	var vals []string
	for _, l := range strings.Split(j.out.String(), "\n") {
		if f := strings.Fields(l); len(f) == 5 && f[0] == "sent" {
			vals = append(vals, f[4])
		}
	}
	if len(vals) != j.count || !strings.Contains(j.out.String(), fmt.Sprintf("produced %d", j.count)) {
		t.Fatalf("the Java producer reported %d records acknowledged, want %d\n%s", len(vals), j.count, tail(j.errb.String(), 4000))
	}
	return vals
}
