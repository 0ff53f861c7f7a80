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
	"github.com/twmb/franz-go/pkg/kfake"
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
func startUpgradable(t *testing.T, bin, dir string, ns *notifySocket) *upgraded {
	t.Helper()
	u := &upgraded{t: t, dir: dir, ns: ns, reaped: make(chan struct{}),
		bin: filepath.Join(t.TempDir(), "flexway"), logPath: filepath.Join(dir, "flexway.log")}
	u.install(bin)
	logf, err := os.Create(u.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	u.first = exec.Command(u.bin, "-config", "flexway.yaml")
	u.first.Dir = dir
	u.first.Env = append(os.Environ(), "NOTIFY_SOCKET="+ns.path)
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
	if len(lines) != 2 || lines[1] != "READY=1" {
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

// dialer connects to each address every 10 ms until stopped and counts
// the dials and the refusals (any failure to connect).
type dialer struct {
	mu      sync.Mutex
	dials   int
	refused []string
	stopc   chan struct{}
	done    sync.WaitGroup
}

func startDialer(addrs ...string) *dialer {
	d := &dialer{stopc: make(chan struct{})}
	for _, a := range addrs {
		d.done.Add(1)
		go func() {
			defer d.done.Done()
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-d.stopc:
					return
				case <-tick.C:
				}
				c, err := net.DialTimeout("tcp", a, 2*time.Second)
				d.mu.Lock()
				d.dials++
				if err != nil {
					d.refused = append(d.refused, fmt.Sprintf("%s at %s: %v", a, time.Now().Format("15:04:05.000"), err))
				}
				d.mu.Unlock()
				if err == nil {
					_ = c.Close()
				}
			}
		}()
	}
	return d
}

func (d *dialer) stop() (dials int, refused []string) {
	close(d.stopc)
	d.done.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dials, d.refused
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

// Issue 36.1-3 (U4, P1), on the built binary: while idempotent franz-go
// producers (acks=all) write through the gateway, a consumer group reads
// through it, and a dialer connects to the bootstrap port and to the admin
// endpoint every 10 ms, the gateway is upgraded by SIGUSR2 three times in
// a row, its binary replaced on disk before each. No dial is refused; each
// new process tells systemd MAINPID=<its pid> then READY=1, and no old one
// says STOPPING=1; each old one drains completely and exits 0 within
// server.shutdown_timeout; no client is restarted (the same clients run
// throughout), no record fails; every acknowledged record is on the broker
// once and read by the group.
func TestHandoverThreeUpgradesNobodyRefusedNothingLost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs producers through three upgrades")
	}
	bin := buildFlexway(t)
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "acme.orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	const shutdown = 5 * time.Second
	dir, base, key := quickstartOn(t, k, "  shutdown_timeout: 5s\n")
	admin := fmt.Sprintf("127.0.0.1:%d", base+4)
	ns := newNotifySocket(t)
	gw := startUpgradable(t, bin, dir, ns)

	group := startGroupReader(t, base, acmeAppKey(t))
	p := &drainProducers{acked: map[string]bool{}, failed: map[string]error{}}
	defer p.close()
	p.start(t, 2, base, key)
	d := startDialer(fmt.Sprintf("127.0.0.1:%d", base), admin)
	p.waitAcked(t, 2000)
	for i := 1; i <= 3; i++ {
		before := p.ackedCount()
		took := gw.upgrade(bin, shutdown)
		gw.waitLog("flexway drained: every request read was answered", i, 10*time.Second)
		httpOK(t, admin)
		p.waitAcked(t, p.ackedCount()+2000) // the producers go on, on the new process
		t.Logf("upgrade %d: pid %d serves, the old one exited %v after it was ready; %d acknowledged before, %d now",
			i, gw.main(), took.Round(time.Millisecond), before, p.ackedCount())
	}
	dials, refused := d.stop()
	p.stop(t)

	if len(refused) > 0 {
		t.Fatalf("%d of %d dials refused across three upgrades, first: %s", len(refused), dials, refused[0])
	}
	p.mu.Lock()
	acked := p.acked
	if len(p.failed) > 0 || len(acked) != p.produced {
		for v, err := range p.failed {
			t.Fatalf("%d records failed (%d produced, %d acknowledged), %s: %v", len(p.failed), p.produced, len(acked), v, err)
		}
		t.Fatalf("%d records produced, %d acknowledged", p.produced, len(acked))
	}
	p.mu.Unlock()
	countedOnBroker(t, k, acked)
	dups := group.waitRead(t, acked, 60*time.Second)
	log := gw.log()
	for _, bad := range []string{"connections closed with requests in flight", "flexway upgrade failed", "panic", `"level":"ERROR"`} {
		if strings.Contains(log, bad) {
			t.Fatalf("the log holds %q:\n%s", bad, tail(log, 6000))
		}
	}
	for _, s := range ns.states() {
		if strings.Contains(s, "STOPPING=1") {
			t.Fatalf("an old process told systemd %q after its handover; told %q", s, ns.states())
		}
	}
	gw.sigterm()
	if st := ns.states(); !strings.Contains(st[len(st)-1], "STOPPING=1") {
		t.Fatalf("the last process's SIGTERM: systemd was told %q last, want STOPPING=1", st[len(st)-1])
	}
	t.Logf("%d dials (every 10 ms, bootstrap and admin) none refused; %d records acknowledged, each on the broker once, all read by the group (%d read twice)",
		dials, len(acked), dups)
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

// Issue 36.1 (U4): a new binary that cannot serve exits and the old
// process goes on serving, saying why, while a dialer connects every 10 ms
// and is never refused: a configuration that no longer loads (the new
// process exits 1, its error on stderr), a binary that dies before it is
// ready (exit 3), one that is never ready (killed at the bound,
// handoverTimeout, 30 s, and not before). Then a good binary takes over:
// one failed upgrade does not block the next.
func TestHandoverFailedTheOldGoesOnServing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; waits for the 30 s bound")
	}
	bin := buildFlexway(t)
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "acme.orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	dir, base, key := quickstartOn(t, k, "  shutdown_timeout: 5s\n")
	gw := startUpgradable(t, bin, dir, newNotifySocket(t))
	d := startDialer(fmt.Sprintf("127.0.0.1:%d", base), fmt.Sprintf("127.0.0.1:%d", base+4))

	cfgPath := filepath.Join(dir, "flexway.yaml")
	good, _ := os.ReadFile(cfgPath)
	writeTestFile(t, cfgPath, append(append([]byte(nil), good...), "no_such_key: 1\n"...))
	gw.refusedUpgrade("exit status 1", 1, 40*time.Second)
	if !strings.Contains(gw.log(), "no_such_key") {
		t.Fatalf("the new process did not say what is wrong with the configuration:\n%s", tail(gw.log(), 3000))
	}
	writeTestFile(t, cfgPath, good)
	produceOne(t, base, key)

	script := filepath.Join(t.TempDir(), "crash")
	writeTestFile(t, script, []byte("#!/bin/sh\necho 'flexway: crashed before ready' >&2\nexit 3\n"))
	os.Chmod(script, 0o755)
	gw.install(script)
	gw.refusedUpgrade("exit status 3", 2, 40*time.Second)
	produceOne(t, base, key)

	writeTestFile(t, script, []byte("#!/bin/sh\nexec sleep 600\n"))
	gw.install(script)
	took := gw.refusedUpgrade("timed out", 3, handoverTimeout+20*time.Second)
	if took < handoverTimeout-time.Second {
		t.Fatalf("a new process not ready was given up after %v, before the bound %v", took, handoverTimeout)
	}
	produceOne(t, base, key)

	gw.upgrade(bin, 5*time.Second)
	produceOne(t, base, key)
	dials, refused := d.stop()
	if len(refused) > 0 {
		t.Fatalf("%d of %d dials refused, first: %s", len(refused), dials, refused[0])
	}
	if strings.Contains(gw.log(), "panic") {
		t.Fatalf("a panic in the log:\n%s", tail(gw.log(), 4000))
	}
	gw.sigterm()
	t.Logf("three failed upgrades (configuration, crash, not ready after %v), then one done; %d dials, none refused", took.Round(time.Second), dials)
}

// Issue 36.1, U3 in the handover's check: the old process serves shop
// (upstream a) and bank (upstream b, another physical cluster); the new
// configuration points b at a's physical cluster under another address, so
// the new process would refuse bank (U3): it says so and exits, the
// handover fails, and the old process goes on serving bank.
func TestHandoverRefusedWhenTheNewProcessRefusesACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildFlexway(t)
	ka, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("physical-a"), kfake.SeedTopics(1, "acme.orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer ka.Close()
	kb, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("physical-b"), kfake.SeedTopics(1, "b.acme.ledger"))
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	dir := t.TempDir()
	base := testkit.FreePorts(t, 4)
	key := testkit.WriteTwoUpstreams(t, dir, ka.ListenAddrs()[0], kb.ListenAddrs()[0], testkit.TwoUpstreamsPlaintext(base))
	gw := startUpgradable(t, bin, dir, newNotifySocket(t))
	d := startDialer(fmt.Sprintf("127.0.0.1:%d", base+2))

	_, port, _ := net.SplitHostPort(ka.ListenAddrs()[0])
	testkit.WriteTwoUpstreams(t, dir, ka.ListenAddrs()[0], "localhost:"+port, testkit.TwoUpstreamsPlaintext(base))
	gw.refusedUpgrade("exit status 1", 1, 40*time.Second)
	line := logLine(gw.log(), "flexway handover refused")
	for _, want := range []string{`"level":"ERROR"`, "refuses a cluster the old one did not (U3)", "cluster bank"} {
		if !strings.Contains(line, want) {
			t.Fatalf("the new process's line %q lacks %q", line, want)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", base+2)),
		kgo.SASL(plain.Auth{User: "acme-app", Pass: key}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("cluster bank, served by the old process after the refused handover: %v", err)
	}
	if dials, refused := d.stop(); len(refused) > 0 {
		t.Fatalf("%d of %d dials to bank refused, first: %s", len(refused), dials, refused[0])
	}
	gw.sigterm()
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

// Issue 36.1 with reloads (S1): ports a reload adds are handed over too,
// and a port a reload retires stops listening even though a handover holds
// its socket. shop is served from the start; a reload adds bank; an
// upgrade passes bank's ports on (a dialer every 10 ms is never refused,
// a Produce to bank goes through the new process); a reload retires shop:
// its bootstrap refuses connections at once; another upgrade; a reload
// brings shop back on the same ports, served.
func TestHandoverPassesThePortsReloadsChanged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildFlexway(t)
	ka, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("physical-a"), kfake.SeedTopics(1, "acme.orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer ka.Close()
	kb, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("physical-b"), kfake.SeedTopics(1, "b.acme.ledger"))
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	dir := t.TempDir()
	base := testkit.FreePorts(t, 4)
	a, b := ka.ListenAddrs()[0], kb.ListenAddrs()[0]
	key := writeClusters(t, dir, a, b, twoClusterLines(base, true, false))
	gw := startUpgradable(t, bin, dir, newNotifySocket(t))
	produce := func(port int, topic string) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", port)), kgo.SASL(plain.Auth{User: "acme-app", Pass: key}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce to %s on %d: %v", topic, port, err)
		}
	}

	gw.reloadTo(dir, a, b, twoClusterLines(base, true, true), 1)
	produce(base+2, "ledger")
	d := startDialer(fmt.Sprintf("127.0.0.1:%d", base+2), fmt.Sprintf("127.0.0.1:%d", base))
	gw.upgrade(bin, 5*time.Second)
	produce(base+2, "ledger")
	produce(base, "orders")
	if dials, refused := d.stop(); len(refused) > 0 {
		t.Fatalf("%d of %d dials refused, first: %s", len(refused), dials, refused[0])
	}

	gw.reloadTo(dir, a, b, twoClusterLines(base, false, true), 2)
	refusedWithin(t, fmt.Sprintf("127.0.0.1:%d", base), 5*time.Second)
	gw.upgrade(bin, 5*time.Second)
	refusedWithin(t, fmt.Sprintf("127.0.0.1:%d", base), time.Second)
	produce(base+2, "ledger")
	gw.reloadTo(dir, a, b, twoClusterLines(base, true, true), 3)
	produce(base, "orders")
	if strings.Contains(gw.log(), "configuration reload refused") {
		t.Fatalf("a reload was refused:\n%s", tail(gw.log(), 4000))
	}
	gw.sigterm()
}
