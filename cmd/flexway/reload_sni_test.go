package main

// S1 and L1 on the built binary's TLS port: a cluster a SIGHUP adds is
// routed by its SNI names (the listener's certificate, start-only, already
// covers them), and a cluster a SIGHUP removes is refused by name, with
// seed 002's line, its open TLS connections closed.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kgo"
)

const sniDomain = "kafka.reload.test"

// sniRig is a reload rig whose clients come in on the TLS port.
type sniRig struct {
	*reloadRig
	port int
	pool *x509.CertPool
}

// bootstrap is cluster's SNI bootstrap name.
func bootstrap(cluster string) string { return "bootstrap." + cluster + "." + sniDomain }

// client is a franz-go client of cluster through the TLS port: its seed
// is cluster's bootstrap name, each broker's name is the SNI name of its
// connection (testkit.LoopbackDialer resolves them all to the gateway),
// the test's CA trusted.
func (r *sniRig) client(cluster string, opts ...kgo.Opt) *kgo.Client {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: r.pool}
	return newReloadClient(r.t, append([]kgo.Opt{kgo.SeedBrokers(fmt.Sprintf("%s:%d", bootstrap(cluster), r.port)),
		kgo.Dialer(testkit.LoopbackDialer(tc))}, opts...)...)
}

// roundTrip produces and consumes value on topic of cluster by SNI.
func (r *sniRig) roundTrip(cluster, topic, value string) {
	r.t.Helper()
	roundTripWith(r.t, "SNI "+bootstrap(cluster), func(o ...kgo.Opt) *kgo.Client { return r.client(cluster, o...) }, topic, value)
}

// handshake opens a TLS connection naming name by SNI on the TLS port.
func (r *sniRig) handshake(name string) (*tls.Conn, error) {
	d := &tls.Dialer{Config: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: r.pool, ServerName: name}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", r.port))
	if err != nil {
		return nil, err
	}
	return c.(*tls.Conn), nil
}

// refused checks that a TLS client naming cluster's bootstrap is closed
// before its handshake ends, and that flexway says why with the seed's
// line ("kafka connection refused", the SNI named).
func (r *sniRig) refused(cluster string) {
	t := r.t
	before := len(r.gw.stderr.String())
	if c, err := r.handshake(bootstrap(cluster)); err == nil {
		c.Close()
		t.Fatalf("a TLS client naming %s completed its handshake", bootstrap(cluster))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		line := logLine(r.gw.stderr.String()[before:], `"sni":"`+bootstrap(cluster)+`"`)
		if strings.Contains(line, `"msg":"kafka connection refused"`) && strings.Contains(line, `"cause":"SNI names no declared cluster"`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line refusing the SNI name %s:\n%s", bootstrap(cluster), r.gw.stderr.String()[before:])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReloadRoutesAnAddedClusterBySNI: the gateway starts with cluster
// shop on its TLS port, its certificate covering shop's and bank's names.
// bank is refused by SNI; a SIGHUP adds bank (and its upstream): a client
// naming bank's bootstrap produces and consumes on bank's brokers, shop's
// still does; a SIGHUP removes bank: its open TLS connections are closed
// with seed 002's line, a new one naming bank is refused, shop serves.
// A route read from a snapshot not in force fails either way.
func TestReloadRoutesAnAddedClusterBySNI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildFlexway(t)
	kA := newKfake(t, "physical-a", "acme.orders")
	kB := newKfake(t, "physical-b", "b.acme.ledger")
	dir := t.TempDir()
	ca := testkit.NewCA(t, "reload SNI test CA")
	var names []string
	for _, cl := range []string{"shop", "bank"} {
		names = append(names, bootstrap(cl), "*."+cl+"."+sniDomain)
	}
	cert, key := ca.Issue(t, testkit.Leaf{CommonName: "flexway", Names: names})
	testkit.WriteFile(t, dir, "tls.crt", cert)
	testkit.WriteFile(t, dir, "tls.key", key)

	shop := reloadCluster{name: "shop", upstream: "a", topic: "orders"}
	bank := reloadCluster{name: "bank", upstream: "b", prefix: "b.", topic: "ledger"}
	start := reloadConfig{clusters: []reloadCluster{shop}, upstreams: map[string]string{"a": kA.ListenAddrs()[0]},
		tls: &reloadTLS{port: testkit.FreePort(t), domain: sniDomain}}
	start.write(t, dir)
	r := &sniRig{reloadRig: &reloadRig{t: t, gw: startFlexway(t, bin, dir), dir: dir}, port: start.tls.port, pool: ca.Pool()}
	r.gw.waitLog("flexway started", 20*time.Second)
	r.roundTrip("shop", "orders", "shop before any reload")
	r.refused("bank")

	added := start.with(bank, kB.ListenAddrs()[0])
	if out := r.reload(added); !strings.Contains(out, "configuration reloaded") {
		t.Fatalf("the reload that adds cluster bank was refused:\n%s", out)
	}
	r.roundTrip("bank", "ledger", "bank by SNI, added by SIGHUP")
	if !inBroker(t, kB, "b.acme.ledger", "bank by SNI, added by SIGHUP") {
		t.Fatal("the record produced by SNI to the added cluster is not in upstream b's brokers")
	}
	r.roundTrip("shop", "orders", "shop after bank was added")

	r.removeBank(start)
	r.refused("bank")
	r.roundTrip("shop", "orders", "shop after bank was removed")
	r.gw.stop()
}

// removeBank reloads cfg (bank gone) while a client authenticated on bank
// by SNI and a bare TLS connection to bank's bootstrap are open: both are
// closed at once, each with seed 002's line for an undeclared cluster.
func (r *sniRig) removeBank(cfg reloadConfig) {
	t := r.t
	raw, err := r.handshake(bootstrap("bank"))
	if err != nil {
		t.Fatalf("a TLS connection to bank's bootstrap: %v", err)
	}
	defer raw.Close()
	p := r.client("bank")
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: []byte("before bank is removed")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	out := r.reload(cfg)
	if !strings.Contains(out, "configuration reloaded") {
		t.Fatalf("the reload that removes cluster bank was refused:\n%s", out)
	}
	_ = raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := raw.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) || err == nil {
		t.Fatalf("a TLS connection to the removed cluster's bootstrap is still open (read: %v)", err)
	}
	var bare, authed int
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, `"msg":"kafka connection refused"`) && strings.Contains(l, `"cause":"the virtual cluster is no longer declared"`) &&
			strings.Contains(l, `"cluster":"bank"`) {
			if strings.Contains(l, `"tenant":"acme"`) {
				authed++
			} else {
				bare++
			}
		}
	}
	if bare < 1 || authed < 1 {
		t.Fatalf("want the seed's line for the bare TLS connection and for the client of tenant acme, got %d and %d:\n%s", bare, authed, out)
	}
}
