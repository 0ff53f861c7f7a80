package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// Issue 36.1-3 (U4, P1), on the built binary: while idempotent franz-go
// producers and a Java producer (kafka-clients, acks=all, one process
// throughout) write through the gateway, a consumer group reads
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
	java := startJavaProducer(t, base, key, 8000, 5) // 40 s of sending, one process throughout
	d := startDialer(fmt.Sprintf("127.0.0.1:%d", base), admin)
	p.waitAcked(t, 2000)
	group.waitPrefix(t, java.prefix+"-", 60*time.Second) // the Java producer is sending
	for i := 1; i <= 3; i++ {
		before := p.ackedCount()
		took := gw.upgrade(bin, shutdown)
		gw.waitLog("flexway drained: every request read was answered", i, 10*time.Second)
		httpOK(t, admin)
		p.waitAcked(t, p.ackedCount()+2000) // the producers go on, on the new process
		t.Logf("upgrade %d: pid %d serves, the old one exited %v after it was ready; %d acknowledged before, %d now",
			i, gw.main(), took.Round(time.Millisecond), before, p.ackedCount())
	}
	if !java.running() {
		t.Fatal("the Java producer finished before the third upgrade: give it more records")
	}
	dials, refused := d.Stop()
	p.stop(t)
	javaAcked := java.acked(t, 90*time.Second)

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
	for _, v := range javaAcked {
		acked[v] = true
	}
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
	t.Logf("%d dials (every 10 ms, bootstrap and admin) none refused; %d records acknowledged (%d to the Java producer), each on the broker once, all read by the group (%d read twice)",
		dials, len(acked), len(javaAcked), dups)
}

// Issue 36.1 (U4): a new binary that cannot serve exits and the old
// process goes on serving, saying why, while a dialer connects every 10 ms
// and is never refused: a configuration that no longer loads (the new
// process exits 1, its error on stderr), a binary that dies before it is
// ready (exit 3), one that is never ready (killed at the bound,
// handoverTimeout, 30 s, and not before; a second SIGUSR2 meanwhile is
// ignored, and the log says so). Then a good binary takes over:
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
	go func() { // one upgrade at a time: a second SIGUSR2 meanwhile is ignored, and says so
		for strings.Count(gw.log(), "flexway upgrade: starting the new binary") < 3 {
			time.Sleep(20 * time.Millisecond)
		}
		_ = syscall.Kill(gw.main(), syscall.SIGUSR2)
	}()
	took := gw.refusedUpgrade("timed out", 3, handoverTimeout+20*time.Second)
	if n := strings.Count(gw.log(), "flexway upgrade already in progress: signal ignored"); n != 1 {
		t.Fatalf("a SIGUSR2 during an upgrade: %d lines saying it is ignored, want 1", n)
	}
	if took < handoverTimeout-time.Second {
		t.Fatalf("a new process not ready was given up after %v, before the bound %v", took, handoverTimeout)
	}
	produceOne(t, base, key)

	gw.upgrade(bin, 5*time.Second)
	produceOne(t, base, key)
	dials, refused := d.Stop()
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
	if dials, refused := d.Stop(); len(refused) > 0 {
		t.Fatalf("%d of %d dials to bank refused, first: %s", len(refused), dials, refused[0])
	}
	gw.sigterm()
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
	if dials, refused := d.Stop(); len(refused) > 0 {
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

// Issue 36.1 on the TLS port: the gateway serves shop by SNI only; a
// producer on the TLS port keeps its client (the same kgo.Client) across
// an upgrade, a dialer connects to the TLS port every 10 ms and is never
// refused, and a TLS handshake naming shop completes on the new process.
func TestHandoverPassesTheTLSPort(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildFlexway(t)
	kA := newKfake(t, "physical-a", "acme.orders")
	dir := t.TempDir()
	ca := testkit.NewCA(t, "handover TLS test CA")
	cert, key := ca.Issue(t, testkit.Leaf{CommonName: "flexway", Names: []string{bootstrap("shop"), "*.shop." + sniDomain}})
	testkit.WriteFile(t, dir, "tls.crt", cert)
	testkit.WriteFile(t, dir, "tls.key", key)
	cfg := reloadConfig{clusters: []reloadCluster{{name: "shop", upstream: "a", topic: "orders"}},
		upstreams: map[string]string{"a": kA.ListenAddrs()[0]}, tls: &reloadTLS{port: testkit.FreePort(t), domain: sniDomain}}
	cfg.write(t, dir)
	gw := startUpgradable(t, bin, dir, newNotifySocket(t))
	r := &sniRig{reloadRig: &reloadRig{t: t, dir: dir}, port: cfg.tls.port, pool: ca.Pool()}
	p := r.client("shop")
	defer p.Close()
	produce := func(v string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %q on the TLS port: %v", v, err)
		}
	}
	produce("before the upgrade")
	d := startDialer(fmt.Sprintf("127.0.0.1:%d", cfg.tls.port))
	gw.upgrade(bin, 10*time.Second)
	produce("after the upgrade, the same client")
	c, err := r.handshake(bootstrap("shop"))
	if err != nil {
		t.Fatalf("a TLS handshake naming shop on the new process: %v", err)
	}
	c.Close()
	if dials, refused := d.Stop(); len(refused) > 0 {
		t.Fatalf("%d of %d dials to the TLS port refused, first: %s", len(refused), dials, refused[0])
	}
	for _, v := range []string{"before the upgrade", "after the upgrade, the same client"} {
		if !inBroker(t, kA, "acme.orders", v) {
			t.Fatalf("%q is not on the broker", v)
		}
	}
	gw.sigterm()
}
