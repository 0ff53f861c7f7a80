package main

// S1 on the built binary: a SIGHUP serves what the contract adds (a
// cluster and its ports, an upstream dialed and checked first, a changed
// broker list), refuses whole what it cannot serve (the old configuration
// still serving), and closes a removed cluster's connections with seed
// 002's line; server.admin.address moves.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// reloadCluster is one virtual cluster of a reload test's contract: one
// topic, produced and consumed by the key, on plaintext ports from
// (bootstrap) and from+1 (node 0).
type reloadCluster struct {
	name, upstream, prefix, topic string
	from                          int
}

// reloadConfig is what a reload test writes: its clusters, its upstreams'
// brokers (one address each), its admin port (0: none), its TLS listener
// (nil: none).
type reloadConfig struct {
	clusters  []reloadCluster
	upstreams map[string]string
	admin     int
	tls       *reloadTLS
}

// reloadTLS is a TLS listener on 127.0.0.1:port, its certificate in the
// config's folder (tls.crt, tls.key), its brokers named under domain.
type reloadTLS struct {
	port   int
	domain string
}

// listenerYAML is listeners.kafka: the TLS listener when c has one, and
// the plaintext fallback of the clusters given ports (from > 0), if any.
func (c reloadConfig) listenerYAML() string {
	s := "listeners:\n  kafka:\n"
	if c.tls != nil {
		s += fmt.Sprintf("    address: \"127.0.0.1:%d\"\n    tls: { cert_file: ./tls.crt, key_file: ./tls.key }\n    sni_domain: %s\n", c.tls.port, c.tls.domain)
	}
	var ranges []string
	for _, cl := range c.clusters {
		if cl.from > 0 {
			ranges = append(ranges, fmt.Sprintf("        %s: { ports: { from: %d, to: %d }, first_node_id: 0 }\n", cl.name, cl.from, cl.from+1))
		}
	}
	if len(ranges) > 0 {
		s += "    plaintext:\n      mesh_only: true\n      bind_host: 127.0.0.1\n      advertised_host: 127.0.0.1\n      clusters:\n" + strings.Join(ranges, "")
	}
	return s
}

const reloadKey = "72656c6f61642d746573742d6b6579"

// write writes flexway.yaml, asyncapi.yaml and api-keys.yaml into dir.
func (c reloadConfig) write(t *testing.T, dir string) {
	t.Helper()
	var chans, ops, ups, opIDs []string
	for _, cl := range c.clusters {
		chans = append(chans, fmt.Sprintf("  %s:\n    address: \"%s{tenant}.%s\"\n    parameters:\n      tenant: { x-flexway-bind: tenant }\n", cl.topic, cl.prefix, cl.topic))
		for _, act := range []string{"send", "receive"} {
			id := act + "_" + cl.topic
			opIDs = append(opIDs, id)
			ops = append(ops, fmt.Sprintf("  %s:\n    action: %s\n    channel: { $ref: \"#/channels/%s\" }\n    x-flexway-upstream: %s\n    x-flexway-kafka-proxy: { cluster: %s }\n    security: [ { $ref: \"#/components/securitySchemes/apiKey\" } ]\n", id, act, cl.topic, cl.upstream, cl.name))
		}
	}
	for name, addr := range c.upstreams {
		ups = append(ups, fmt.Sprintf("  %s: { protocol: kafka, brokers: [%q], timeout: 1s }\n", name, addr))
	}
	sort.Strings(ups)
	contract := "asyncapi: 3.0.0\ninfo: { title: Reload, version: \"1.0.0\" }\nchannels:\n" + strings.Join(chans, "") +
		"operations:\n" + strings.Join(ops, "") + "components:\n  securitySchemes:\n    apiKey: { type: plain }\n"
	h := configs.HashKey(reloadKey)
	keys := fmt.Sprintf("keys:\n  - id: acme-app\n    hash: \"sha256:%x\"\n    tenant: acme\n    operations: [%s]\n", h[:], strings.Join(opIDs, ", "))
	server := ""
	if c.admin > 0 {
		server = fmt.Sprintf("server: { admin: { address: \"127.0.0.1:%d\" } }\n", c.admin)
	}
	flexway := "version: 1\n" + server + "contracts:\n  asyncapi: ./asyncapi.yaml\nupstreams:\n" + strings.Join(ups, "") +
		"auth:\n  api_keys:\n    store: \"file:./api-keys.yaml\"\n" + c.listenerYAML()
	for name, body := range map[string]string{"asyncapi.yaml": contract, "api-keys.yaml": keys, "flexway.yaml": flexway} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// reloadRig is one gateway, reloaded phase after phase.
type reloadRig struct {
	t   *testing.T
	gw  *gateway
	dir string
}

// reload writes cfg, sends SIGHUP and returns what flexway logged until it
// said the reload's outcome.
func (r *reloadRig) reload(cfg reloadConfig) string {
	r.t.Helper()
	cfg.write(r.t, r.dir)
	before := len(r.gw.stderr.String())
	r.gw.signal(syscall.SIGHUP)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		out := r.gw.stderr.String()[before:]
		if strings.Contains(out, "configuration reloaded") || strings.Contains(out, "configuration reload refused") {
			return out
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatal("flexway said nothing of the reload within 20s")
	return ""
}

// client is a franz-go client of the gateway's cluster whose bootstrap is
// port, with library defaults but short retries.
func reloadClient(t *testing.T, port int, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return newReloadClient(t, append([]kgo.Opt{kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", port))}, opts...)...)
}

// newReloadClient is a franz-go client authenticated by the test's key,
// with library defaults but short retries, and opts (its seed brokers).
func newReloadClient(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SASL(plain.Auth{User: "acme-app", Pass: reloadKey}.AsMechanism()),
		kgo.RequestRetries(2), kgo.RetryTimeout(3 * time.Second), kgo.RecordDeliveryTimeout(8 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// roundTrip produces value to topic through the cluster at port, then
// reads it back through the gateway with a new consumer.
func roundTrip(t *testing.T, port int, topic, value string) {
	t.Helper()
	roundTripWith(t, fmt.Sprintf("port %d", port), func(opts ...kgo.Opt) *kgo.Client { return reloadClient(t, port, opts...) }, topic, value)
}

// roundTripWith produces value to topic with a client of dial, then reads
// it back with a new consumer of dial; where names the way in.
func roundTripWith(t *testing.T, where string, dial func(...kgo.Opt) *kgo.Client, topic, value string) {
	t.Helper()
	p := dial()
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatalf("produce %q to %s through %s: %v", value, topic, where, err)
	}
	c := dial(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer c.Close()
	consumeUntil(t, c, value)
}

// inBroker reports whether k's topic holds value, read straight from k.
func inBroker(t *testing.T, k *kfake.Cluster, topic, value string) bool {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(k.ListenAddrs()...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		found := false
		c.PollFetches(ctx).EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == value })
		if found {
			return true
		}
	}
	return false
}

// portClosed waits until nothing listens on port any more.
func portClosed(t *testing.T, port int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err != nil {
			return
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("port %d still accepts connections", port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func newKfake(t *testing.T, id string, topics ...string) *kfake.Cluster {
	t.Helper()
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID(id), kfake.SeedTopics(1, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	return k
}

// healthy reports whether the admin endpoint answers on port.
func healthy(port int) bool {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// TestReloadServesWhatTheContractAdds drives one gateway through five
// reloads: two refused whole (an upstream unreachable, an upstream on the
// physical cluster of another under another prefix, U3), the old
// configuration serving after each; a cluster added on a new upstream,
// served on its new ports, the admin endpoint moved; the brokers of an
// upstream changed, the next connections reaching the new ones; the
// cluster removed, its connections closed with the seed's line and its
// ports closed.
func TestReloadServesWhatTheContractAdds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildFlexway(t)
	kA := newKfake(t, "physical-a", "acme.orders")
	kA2 := newKfake(t, "physical-a2", "acme.orders")
	kB := newKfake(t, "physical-b", "b.acme.ledger")
	base := testkit.FreePorts(t, 6)
	shop := reloadCluster{name: "shop", upstream: "a", topic: "orders", from: base}
	bank := reloadCluster{name: "bank", upstream: "b", prefix: "b.", topic: "ledger", from: base + 2}
	dir := t.TempDir()
	start := reloadConfig{clusters: []reloadCluster{shop}, upstreams: map[string]string{"a": kA.ListenAddrs()[0]}, admin: base + 4}
	start.write(t, dir)
	r := &reloadRig{t: t, gw: startFlexway(t, bin, dir), dir: dir}
	r.gw.waitLog("flexway started", 20*time.Second)
	roundTrip(t, shop.from, "orders", "before any reload")

	r.refusedUpstreams(start, bank, kA)
	added := r.addClusterAndUpstream(start, bank, kB)
	moved := r.changeBrokers(added, kA, kA2)
	r.removeCluster(moved, bank)
	r.gw.stop()
}

// with returns c with cl added, served by upstream cl.upstream at addr.
func (c reloadConfig) with(cl reloadCluster, addr string) reloadConfig {
	n := reloadConfig{clusters: append(append([]reloadCluster(nil), c.clusters...), cl), upstreams: map[string]string{}, admin: c.admin, tls: c.tls}
	for k, v := range c.upstreams {
		n.upstreams[k] = v
	}
	n.upstreams[cl.upstream] = addr
	return n
}

// refusedUpstreams: bank on an upstream b that no broker answers, then on
// one that reaches shop's physical cluster (localhost, where a names
// 127.0.0.1: the load cannot tell them apart) under the prefix "b.":
// both reloads are refused whole; shop serves, bank's ports stay closed.
func (r *reloadRig) refusedUpstreams(start reloadConfig, bank reloadCluster, kA *kfake.Cluster) {
	t := r.t
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	out := r.reload(start.with(bank, dead))
	if !strings.Contains(out, "configuration reload refused: the old configuration stays") || !strings.Contains(out, "b: metadata") {
		t.Fatalf("a reload whose new upstream is unreachable was not refused naming it:\n%s", out)
	}
	roundTrip(t, start.clusters[0].from, "orders", "after a reload refused: upstream unreachable")
	portClosed(t, bank.from)

	_, port, _ := net.SplitHostPort(kA.ListenAddrs()[0])
	out = r.reload(start.with(bank, "localhost:"+port))
	line := logLine(out, "two upstreams reach the same physical cluster")
	for _, want := range []string{`"level":"ERROR"`, `"upstream":"b"`, `"same_as":"a"`, `"cluster_id":"physical-a"`} {
		if !strings.Contains(line, want) {
			t.Fatalf("the U3 line %q lacks %s:\n%s", line, want, out)
		}
	}
	if !strings.Contains(out, "configuration reload refused: the old configuration stays") {
		t.Fatalf("a reload whose new upstream reaches another's physical cluster was not refused:\n%s", out)
	}
	roundTrip(t, start.clusters[0].from, "orders", "after a reload refused: same physical cluster")
	portClosed(t, bank.from)
}

// addClusterAndUpstream: bank on a new upstream b (its own kfake), the
// admin endpoint moved to the next port: bank is served on its new ports
// (the records land in b's brokers), shop still is, and /healthz answers
// at the new address only.
func (r *reloadRig) addClusterAndUpstream(start reloadConfig, bank reloadCluster, kB *kfake.Cluster) reloadConfig {
	t := r.t
	cfg := start.with(bank, kB.ListenAddrs()[0])
	cfg.admin = start.admin + 1
	if out := r.reload(cfg); !strings.Contains(out, "configuration reloaded") {
		t.Fatalf("the reload that adds cluster bank and upstream b was refused:\n%s", out)
	}
	roundTrip(t, bank.from, "ledger", "through a cluster added by SIGHUP")
	if !inBroker(t, kB, "b.acme.ledger", "through a cluster added by SIGHUP") {
		t.Fatal("the record produced to the added cluster is not in upstream b's brokers")
	}
	roundTrip(t, start.clusters[0].from, "orders", "after bank was added")
	deadline := time.Now().Add(10 * time.Second)
	for !healthy(cfg.admin) {
		if time.Now().After(deadline) {
			t.Fatalf("the admin endpoint does not answer at its new port %d", cfg.admin)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if healthy(start.admin) {
		t.Fatalf("the admin endpoint still answers at its old port %d", start.admin)
	}
	return cfg
}

// changeBrokers: upstream a's brokers changed from kA to kA2: a new
// client's records land in kA2, not in kA.
func (r *reloadRig) changeBrokers(cfg reloadConfig, kA, kA2 *kfake.Cluster) reloadConfig {
	t := r.t
	next := cfg.with(cfg.clusters[0], kA2.ListenAddrs()[0])
	next.clusters = cfg.clusters
	if out := r.reload(next); !strings.Contains(out, "configuration reloaded") {
		t.Fatalf("the reload that changes upstream a's brokers was refused:\n%s", out)
	}
	const v = "after upstream a's brokers changed"
	roundTrip(t, cfg.clusters[0].from, "orders", v)
	if !inBroker(t, kA2, "acme.orders", v) {
		t.Fatal("the record produced after the brokers changed is not in the new brokers")
	}
	if inBroker(t, kA, "acme.orders", v) {
		t.Fatal("the record produced after the brokers changed reached the old brokers")
	}
	return next
}

// removeCluster: bank removed (and upstream b with it) while a client
// authenticated on it and a bare connection to its bootstrap are open:
// both are closed at once, each with seed 002's line for an undeclared
// cluster; bank's ports close; shop still serves.
func (r *reloadRig) removeCluster(cfg reloadConfig, bank reloadCluster) {
	t := r.t
	raw, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", bank.from))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	p := reloadClient(t, bank.from)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: []byte("before bank is removed")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	next := reloadConfig{clusters: cfg.clusters[:1], upstreams: map[string]string{"a": cfg.upstreams["a"]}, admin: cfg.admin}
	out := r.reload(next)
	if !strings.Contains(out, "configuration reloaded") {
		t.Fatalf("the reload that removes cluster bank was refused:\n%s", out)
	}
	_ = raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := raw.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) || err == nil {
		t.Fatalf("a connection to the removed cluster's bootstrap is still open (read: %v)", err)
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, `"msg":"kafka connection refused"`) && strings.Contains(l, `"cause":"the virtual cluster is no longer declared"`) &&
			strings.Contains(l, `"cluster":"bank"`) {
			lines = append(lines, l)
		}
	}
	authed := 0
	for _, l := range lines {
		if strings.Contains(l, `"tenant":"acme"`) {
			authed++
		}
	}
	if len(lines) < 2 || authed < 1 {
		t.Fatalf("want the seed's line for the bare connection and for the client of tenant acme, got %d (%d with the tenant):\n%s", len(lines), authed, out)
	}
	portClosed(t, bank.from)
	portClosed(t, bank.from+1)
	roundTrip(t, cfg.clusters[0].from, "orders", "after bank was removed")
}
