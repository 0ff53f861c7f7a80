package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// notifySocket is systemd's notify socket as the test plays it: a
// unixgram socket whose datagrams are kept in order.
type notifySocket struct {
	path string
	mu   sync.Mutex
	got  []string
}

func newNotifySocket(t *testing.T) *notifySocket {
	t.Helper()
	ns := &notifySocket{path: filepath.Join(t.TempDir(), "notify.sock")}
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: ns.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, _, err := ln.ReadFromUnix(buf)
			if err != nil {
				return
			}
			ns.mu.Lock()
			ns.got = append(ns.got, string(buf[:n]))
			ns.mu.Unlock()
		}
	}()
	return ns
}

func (ns *notifySocket) states() []string {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return append([]string(nil), ns.got...)
}

// startUnderSystemd starts the built binary on dir's flexway.yaml as
// systemd would: NOTIFY_SOCKET set, and waits for its READY=1.
func startUnderSystemd(t *testing.T, bin, dir string, ns *notifySocket) *gateway {
	t.Helper()
	before := len(ns.states())
	gw := startFlexway(t, bin, dir, "NOTIFY_SOCKET="+ns.path)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if s := ns.states(); len(s) > before && strings.Contains(strings.Join(s[before:], "\n"), "READY=1") {
			return gw
		}
		select {
		case <-gw.done:
			t.Fatalf("flexway exited before READY=1:\n%s", gw.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("systemd was never told READY=1")
		}
	}
}

// sigterm stops the gateway as systemd's stop does and checks what an
// operator checks: exit status 0, STOPPING=1 told to systemd after
// READY=1, the drain logged as complete (nothing was cut), no panic.
func (gw *gateway) sigterm(ns *notifySocket) {
	t := gw.t
	t.Helper()
	start := time.Now()
	gw.signal(syscall.SIGTERM)
	select {
	case <-gw.done:
	case <-time.After(30 * time.Second):
		t.Fatal("flexway did not exit within 30 s of SIGTERM")
	}
	took := time.Since(start)
	if code := gw.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit status %d after SIGTERM", code)
	}
	st := ns.states()
	if n := len(st); n < 2 || !strings.Contains(st[n-1], "STOPPING=1") || !strings.Contains(st[n-2], "READY=1") {
		t.Fatalf("systemd was told %q: want READY=1 then STOPPING=1 last", st)
	}
	e := gw.stderr.String()
	if !strings.Contains(e, "flexway drained: every request read was answered") || strings.Contains(e, "connections closed with requests in flight") {
		t.Fatalf("the drain did not complete (took %v):\n%s", took, tail(e, 4000))
	}
	if strings.Contains(e, "panic") || strings.Contains(e, "goroutine ") {
		t.Fatalf("stderr holds a panic:\n%s", e)
	}
	t.Logf("SIGTERM: drained and exited 0 in %v", took.Round(time.Millisecond))
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// quickstartOn writes the quickstart in a new folder with its upstream
// replaced by kfake cluster k, on free ports (bootstrap base, brokers
// after it, the admin endpoint at base+4); server adds lines under server:.
// It returns the folder, base and the key of acme-orders-producer.
func quickstartOn(t *testing.T, k *kfake.Cluster, server string) (dir string, base int, key string) {
	t.Helper()
	dir = copyQuickstart(t)
	keyb, err := os.ReadFile("../../configs/quickstart/acme-orders-producer.key")
	if err != nil {
		t.Fatal(err)
	}
	key = strings.TrimSpace(string(keyb))
	base = testkit.FreePorts(t, 5)
	cfg, _ := os.ReadFile(filepath.Join(dir, "flexway.yaml"))
	c := strings.NewReplacer(
		"embedded: { brokers: 3 }", fmt.Sprintf("brokers: [%q]", k.ListenAddrs()[0]),
		"from: 19092, to: 19095", fmt.Sprintf("from: %d, to: %d", base, base+3),
		"127.0.0.1:9464", fmt.Sprintf("127.0.0.1:%d", base+4),
		"server:\n", "server:\n"+server,
	).Replace(string(cfg))
	if !strings.Contains(c, k.ListenAddrs()[0]) || !strings.Contains(c, "server:\n"+server) {
		t.Fatal("the quickstart changed: the test's replacements no longer apply")
	}
	writeTestFile(t, filepath.Join(dir, "flexway.yaml"), []byte(c))
	return dir, base, key
}

// U4 and P1, on the built binary: idempotent producers write at full speed
// through flexway, which systemd stops (SIGTERM) mid-run; a second flexway
// takes over on the same ports (a restart) and the producers finish there.
// Counted on the broker, a kfake cluster of the test's own: every record
// acknowledged is there exactly once, none is written twice; each stop
// exits 0 after telling systemd STOPPING=1, the drain complete.
func TestSIGTERMDrainsProducersNoLossNoDuplicate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs producers at full speed")
	}
	bin := buildFlexway(t)
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "acme.orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()

	dir, base, key := quickstartOn(t, k, "")
	ns := newNotifySocket(t)
	gw1 := startUnderSystemd(t, bin, dir, ns)

	// Producers at full speed: each value once, acknowledgements counted.
	const producers = 4
	p := &drainProducers{acked: map[string]bool{}, failed: map[string]error{}}
	defer p.close()
	p.start(t, producers, base, key)
	p.waitAcked(t, 5000)
	before := p.ackedCount()
	gw1.sigterm(ns) // mid-run: the producers keep writing
	t.Logf("first stop: %d acknowledged before SIGTERM, %d when flexway had exited", before, p.ackedCount())

	gw2 := startUnderSystemd(t, bin, dir, ns)
	p.waitAcked(t, p.ackedCount()+5000)
	p.stop(t)
	gw2.sigterm(ns)

	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.failed) > 0 {
		for v, err := range p.failed {
			t.Fatalf("%d records failed, %s: %v", len(p.failed), v, err)
		}
	}
	if len(p.acked) != p.produced {
		t.Fatalf("%d records produced, %d acknowledged", p.produced, len(p.acked))
	}
	countedOnBroker(t, k, p.acked)
	t.Logf("%d records acknowledged across a SIGTERM and a restart: each on the broker once", len(p.acked))
}

// drainProducers are idempotent producers writing through the gateway at
// full speed, each value once, their acknowledgements and failures kept.
type drainProducers struct {
	mu       sync.Mutex
	acked    map[string]bool
	failed   map[string]error
	produced int

	clients []*kgo.Client
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// start opens n producers on the gateway at base, as acme-orders-producer
// with key, each writing until stop.
func (p *drainProducers) start(t *testing.T, n, base int, key string) {
	t.Helper()
	var ctx context.Context
	ctx, p.cancel = context.WithCancel(context.Background())
	for i := 0; i < n; i++ {
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", base)),
			kgo.SASL(plain.Auth{User: "acme-orders-producer", Pass: key}.AsMechanism()),
			kgo.DefaultProduceTopic("orders"),
			kgo.ProducerLinger(0),
			kgo.MaxBufferedRecords(2000),
		)
		if err != nil {
			t.Fatal(err)
		}
		p.clients = append(p.clients, cl)
		p.wg.Add(1)
		go p.produce(ctx, i, cl)
	}
}

// produce writes p<i>-<n> values, n counting up, until ctx ends.
func (p *drainProducers) produce(ctx context.Context, i int, cl *kgo.Client) {
	defer p.wg.Done()
	for n := 0; ctx.Err() == nil; n++ {
		v := fmt.Sprintf("p%d-%08d", i, n)
		p.mu.Lock()
		p.produced++
		p.mu.Unlock()
		cl.Produce(context.Background(), &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			if err != nil {
				p.failed[string(r.Value)] = err
				return
			}
			p.acked[string(r.Value)] = true
		})
	}
}

// ackedCount is the number of records acknowledged so far.
func (p *drainProducers) ackedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

// waitAcked waits, a minute at most, until n records are acknowledged.
func (p *drainProducers) waitAcked(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := p.ackedCount()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d records acknowledged, want %d", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the writing and flushes every producer, a minute at most.
func (p *drainProducers) stop(t *testing.T) {
	t.Helper()
	p.cancel()
	p.wg.Wait()
	fctx, fcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer fcancel()
	for _, cl := range p.clients {
		if err := cl.Flush(fctx); err != nil {
			t.Fatalf("flush: %v", err)
		}
	}
}

// close closes the producers and ends their writing, whatever the test's
// outcome.
func (p *drainProducers) close() {
	for i := len(p.clients) - 1; i >= 0; i-- {
		p.clients[i].Close()
	}
	if p.cancel != nil {
		p.cancel()
	}
}

// countedOnBroker reads acme.orders on kfake cluster k directly: each
// acknowledged record is there exactly once, and nothing else.
func countedOnBroker(t *testing.T, k *kfake.Cluster, acked map[string]bool) {
	t.Helper()
	direct, err := kgo.NewClient(kgo.SeedBrokers(k.ListenAddrs()...), kgo.ConsumeTopics("acme.orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	seen := map[string]int{}
	total := 0
	for total < len(acked) {
		pctx, pcancel := context.WithTimeout(context.Background(), 10*time.Second)
		fs := direct.PollFetches(pctx)
		pcancel()
		if fs.NumRecords() == 0 {
			break
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			total++
		})
	}
	// Whatever else is there (a duplicate past the count) comes at once.
	pctx, pcancel := context.WithTimeout(context.Background(), 2*time.Second)
	direct.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
		seen[string(r.Value)]++
		total++
	})
	pcancel()
	lost, twice := 0, 0
	for v := range acked {
		if seen[v] == 0 {
			lost++
		}
	}
	for v, n := range seen {
		if n > 1 {
			twice++
			if twice == 1 {
				t.Errorf("%s written %d times", v, n)
			}
		}
	}
	if lost > 0 || twice > 0 || total != len(acked) {
		t.Fatalf("%d acknowledged, %d records on the broker: %d lost, %d written twice", len(acked), total, lost, twice)
	}
}

// U4: a second SIGTERM (an operator's impatience, or systemd's final
// signal path) ends a drain that waits on a broker: flexway exits 0 at
// once, long before server.shutdown_timeout (60 s here), and says it left
// a request in flight.
func TestSecondSIGTERMEndsTheDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildFlexway(t)
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "acme.orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close() // wakes the sleeping control function
	dir, base, key := quickstartOn(t, k, "  shutdown_timeout: 60s\n")
	ns := newNotifySocket(t)
	gw := startUnderSystemd(t, bin, dir, ns)
	prod, err := kgo.NewClient(kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", base)),
		kgo.SASL(plain.Auth{User: "acme-orders-producer", Pass: key}.AsMechanism()), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{}, 1)
	k.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		k.DropControl()
		entered <- struct{}{}
		k.SleepControl(func() { time.Sleep(time.Minute) })
		return nil, nil, false
	})
	prod.Produce(ctx, &kgo.Record{Value: []byte("held")}, nil)
	select {
	case <-entered:
	case <-time.After(15 * time.Second):
		t.Fatal("the Produce never reached the broker")
	}
	gw.signal(syscall.SIGTERM)
	gw.waitLog("flexway stopping: draining requests in flight", 10*time.Second)
	gw.signal(syscall.SIGTERM)
	// Ended by the signal, not by shutdown_timeout (60 s) nor the broker's
	// answer (a minute): "the stop was hastened" in the log below says so.
	select {
	case <-gw.done:
	case <-time.After(50 * time.Second):
		t.Fatal("a second SIGTERM did not end the drain")
	}
	if code := gw.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	e := gw.stderr.String()
	for _, want := range []string{"a second signal ends the drain", "connections closed with requests in flight", "the stop was hastened", `"requests":1`} {
		if !strings.Contains(e, want) {
			t.Fatalf("the log lacks %q:\n%s", want, tail(e, 3000))
		}
	}
	if st := ns.states(); !strings.Contains(st[len(st)-1], "STOPPING=1") {
		t.Fatalf("systemd was told %q", st)
	}
}
