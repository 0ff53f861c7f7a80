package engine

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flexway/flexway/engine/looptls"

	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const sniDomain = "kafka.example.test"

// tlsEnv is a gateway with the TLS listener (SNI routing) and mTLS.
type tlsEnv struct {
	*testEnv
	ca     *testCA
	port   int
	client map[string]tls.Certificate // mTLS client certificates by name
}

func newTLSEnv(t *testing.T, extra string, opt ...Option) *tlsEnv {
	t.Helper()
	return newTLSEnvOn(t, "", extra, opt...)
}

// newTLSEnvOn is newTLSEnv in front of upstream: the lines under
// upstreams.events after protocol (4 spaces of indent); "" the embedded
// cluster.
func newTLSEnvOn(t *testing.T, upstream, extra string, opt ...Option) *tlsEnv {
	t.Helper()
	embedded := upstream == ""
	if embedded {
		upstream = "    embedded: { brokers: 3, partitions: 2 }\n"
	}
	env := bareEnv(t)
	dir := env.dir
	ca := newTestCA(t, "flexway test CA")
	other := newTestCA(t, "another CA")
	scert, skey := ca.issue(t, "gateway", []string{"*.shop." + sniDomain}, false, time.Now().Add(24*time.Hour))
	te := &tlsEnv{ca: ca, client: map[string]tls.Certificate{}}
	mk := func(ca *testCA, cn string, notAfter time.Time) tls.Certificate {
		c, k := ca.issue(t, cn, nil, true, notAfter)
		return keyPair(t, c, k)
	}
	te.client["billing"] = mk(ca, "billing-app", time.Now().Add(24*time.Hour))
	te.client["expired"] = mk(ca, "billing-app", time.Now().Add(-time.Hour))
	te.client["foreign"] = mk(other, "billing-app", time.Now().Add(24*time.Hour))
	te.client["undeclared"] = mk(ca, "stranger", time.Now().Add(24*time.Hour))
	writeFile(t, dir, "tls.crt", scert)
	writeFile(t, dir, "tls.key", skey)
	writeFile(t, dir, "ca.crt", ca.pem)

	store := env.keyStore(testKeys, hexSecrets("tls-key"))
	contract := strings.ReplaceAll(testContract, `security: [ { $ref: "#/components/securitySchemes/apiKey" } ]`,
		`security: [ { $ref: "#/components/securitySchemes/apiKey" }, { $ref: "#/components/securitySchemes/cert" } ]`)
	contract = strings.Replace(contract, "    apiKey: { type: plain }\n", "    apiKey: { type: plain }\n    cert: { type: X509 }\n", 1)
	cfg := fmt.Sprintf(`version: 1
contracts:
  asyncapi: ./asyncapi.yaml
upstreams:
  events:
    protocol: kafka
%sauth:
  api_keys:
    store: "file:./api-keys.yaml"
  mtls:
    clients:
      - { id: billing, subject: "CN=billing-app", tenant: acme, operations: [consumeOrders, produceOrders] }
listeners:
  kafka:
    address: "127.0.0.1:0"
    tls: { cert_file: ./tls.crt, key_file: ./tls.key, client_ca_file: ./ca.crt }
    sni_domain: %s
%s`, upstream, sniDomain, loopbackBounds(extra))
	e := env.start(env.load(cfg, contract, store), opt...)
	if embedded {
		env.direct = e.EmbeddedBrokers()["events"]
	}
	te.testEnv = env
	te.port = e.TLSPort()
	env.boot = fmt.Sprintf("bootstrap.shop.%s:%d", sniDomain, te.port)
	return te
}

// dialer resolves every name to the gateway on loopback and speaks TLS
// with the name as SNI, as a client of the real DNS would.
func (te *tlsEnv) dialer(cert *tls.Certificate, minV, maxV uint16) func(ctx context.Context, network, host string) (net.Conn, error) {
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		name, _, _ := net.SplitHostPort(host)
		d := net.Dialer{Timeout: 5 * time.Second}
		raw, err := d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", te.port))
		if err != nil {
			return nil, err
		}
		cfg := &tls.Config{ServerName: name, RootCAs: te.ca.pool(), MinVersion: minV, MaxVersion: maxV}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		c := tls.Client(raw, cfg)
		if err := c.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		return c, nil
	}
}

func (te *tlsEnv) saslClient(id string, maxV uint16, opts ...kgo.Opt) *kgo.Client {
	te.t.Helper()
	base := []kgo.Opt{kgo.SeedBrokers(te.boot), kgo.Dialer(te.dialer(nil, tls.VersionTLS12, maxV)),
		kgo.SASL(plainAuth(id, te.keys[id])), kgo.RequestRetries(2), kgo.RetryTimeout(5 * time.Second)}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		te.t.Fatal(err)
	}
	te.t.Cleanup(cl.Close)
	return cl
}

func (te *tlsEnv) certClient(name string, opts ...kgo.Opt) *kgo.Client {
	te.t.Helper()
	c := te.client[name]
	base := []kgo.Opt{kgo.SeedBrokers(te.boot), kgo.Dialer(te.dialer(&c, tls.VersionTLS12, tls.VersionTLS13)),
		kgo.RequestRetries(1), kgo.RetryTimeout(3 * time.Second)}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		te.t.Fatal(err)
	}
	te.t.Cleanup(cl.Close)
	return cl
}

// L1: over TLS 1.2 and 1.3, the SNI name routes; Metadata answers the
// brokers as broker-<id>.<cluster>.<sni_domain> at the advertised port.
func TestTLSProduceConsumeBySNI(t *testing.T) {
	te := newTLSEnv(t, "")
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		prod := te.saslClient("acme-app", v)
		produceN(t, prod, "orders", 20, fmt.Sprintf("tls%x", v))
	}
	cons := te.saslClient("acme-app", tls.VersionTLS13, kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if got := consumeAll(t, cons, 40, 15*time.Second); len(got) != 40 {
		t.Fatalf("consumed %d over TLS, want 40", len(got))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md, err := kadm.NewClient(te.saslClient("acme-app", tls.VersionTLS13)).Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range md.Brokers {
		want := fmt.Sprintf("broker-%d.shop.%s", b.NodeID, sniDomain)
		if b.Host != want || int(b.Port) != te.port {
			t.Fatalf("broker %d announced as %s:%d, want %s:%d", b.NodeID, b.Host, b.Port, want, te.port)
		}
	}
	if md.Cluster != "shop" {
		t.Fatalf("cluster id %q", md.Cluster)
	}
}

// L1: an SNI naming no declared cluster, or none, is closed at once and logged.
func TestTLSUnknownSNIRefused(t *testing.T) {
	te := newTLSEnv(t, "")
	for _, name := range []string{"bootstrap.other." + sniDomain, "kafka.elsewhere.test", ""} {
		raw, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", te.port), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c := tls.Client(raw, &tls.Config{ServerName: name, InsecureSkipVerify: true})
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if err := c.Handshake(); err == nil {
			t.Fatalf("SNI %q: handshake succeeded", name)
		}
		raw.Close()
	}
	te.waitLog(3*time.Second, "kafka connection refused", "SNI names no declared cluster")
	te.waitLog(3*time.Second, "kafka connection refused", "no SNI name")
}

// A plaintext client on the TLS port is closed and named as such.
func TestPlaintextClientOnTLSPort(t *testing.T) {
	te := newTLSEnv(t, "")
	r := dialPlain(t, fmt.Sprintf("127.0.0.1:%d", te.port))
	r.writeRaw([]byte{0, 0, 0, 20, 0, 18, 0, 3, 0, 0, 0, 1, 0, 1, 'c', 0, 0, 0, 0, 0, 0, 0, 0, 0})
	r.expectClosed(5 * time.Second)
	te.waitLog(3*time.Second, "kafka connection refused", "a plaintext client on the TLS port")
}

// I3, L4: a client certificate declared in auth.mtls.clients authenticates
// without SASL; an expired one, one of another CA, or one not declared is refused.
func TestMTLS(t *testing.T) {
	te := newTLSEnv(t, "")
	prod := te.certClient("billing")
	produceN(t, prod, "orders", 5, "mtls")
	direct := te.directClient(kgo.ConsumeTopics("acme.orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if got := consumeAll(t, direct, 5, 10*time.Second); len(got) != 5 {
		t.Fatalf("the broker's acme.orders holds %d records from the certificate's session", len(got))
	}
	for _, name := range []string{"expired", "foreign", "undeclared"} {
		cl := te.certClient(name)
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		err := cl.Ping(ctx)
		cancel()
		if err == nil {
			t.Fatalf("%s certificate: accepted", name)
		}
	}
	te.waitLog(3*time.Second, "kafka connection refused", "TLS handshake failed")
	te.waitLog(3*time.Second, "kafka authentication refused", "certificate not declared")
}

// L4: a certificate refused in the handshake is logged even when its
// client closes first: a TLS 1.3 client ends its side of the handshake
// before the gateway judges its certificate, and may close at once.
func TestMTLSRefusalLoggedAfterClientCloses(t *testing.T) {
	te := newTLSEnv(t, "")
	c := te.client["expired"]
	conn, err := te.dialer(&c, tls.VersionTLS13, tls.VersionTLS13)(context.Background(), "tcp", te.boot)
	if err != nil {
		t.Fatalf("the client's side of a TLS 1.3 handshake: %v", err)
	}
	conn.Close()
	line := te.waitLog(5*time.Second, "kafka connection refused", "TLS handshake failed")
	if !strings.Contains(line, "expired") {
		t.Fatalf("the refusal does not say why: %s", line)
	}
}

// ARCHITECTURE: crypto/tls does not remember a temporary error from the
// conn under it: the record layer can run on the loop, answering "would
// block" when gnet holds nothing. If a Go release changes this, this test fails.
func TestTLSTemporaryErrorNotSticky(t *testing.T) {
	ca := newTestCA(t, "pin")
	c, k := ca.issue(t, "x", []string{"x.test"}, false, time.Now().Add(time.Hour))
	srvRaw, cliRaw := net.Pipe()
	fc := &flakyConn{Conn: srvRaw}
	srv := tls.Server(fc, &tls.Config{Certificates: []tls.Certificate{keyPair(t, c, k)}})
	cli := tls.Client(cliRaw, &tls.Config{ServerName: "x.test", RootCAs: ca.pool()})
	go cli.Handshake()
	// The handshake runs as in the worker (no temporary errors), then the
	// record layer as on the loop.
	if err := srv.Handshake(); err != nil {
		t.Fatal(err)
	}
	fc.on = true
	go cli.Write([]byte("hello"))
	buf := make([]byte, 16)
	var got []byte
	var temps int
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < 5 && time.Now().Before(deadline) {
		n, err := srv.Read(buf)
		got = append(got, buf[:n]...)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			temps++
			continue
		}
		if err != nil {
			t.Fatalf("tls.Conn kept a temporary error: %v", err)
		}
	}
	if string(got) != "hello" || temps == 0 {
		t.Fatalf("read %q after %d temporary errors", got, temps)
	}
}

// flakyConn answers every other Read with a temporary error, as the adapter does when gnet holds nothing.
type flakyConn struct {
	net.Conn
	n  int
	on bool
}

func (f *flakyConn) Read(p []byte) (int, error) {
	f.n++
	if f.on && f.n%2 == 0 {
		return 0, looptls.ErrWouldBlock
	}
	return f.Conn.Read(p)
}

// L3: auth_timeout counts the TLS handshake: a client that starts one and
// never finishes is closed at it.
func TestTLSHandshakeCountsInAuthTimeout(t *testing.T) {
	te := newTLSEnv(t, "    auth_timeout: 1s\n")
	start := time.Now() // before the dial: the gateway's clock starts at its accept
	r := dialPlain(t, fmt.Sprintf("127.0.0.1:%d", te.port))
	r.writeRaw([]byte{0x16, 0x03, 0x01, 0x00, 0x80, 0x01}) // a ClientHello that never completes
	r.expectClosed(6 * time.Second)
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("closed after %v", d)
	}
}

// O2: before authentication, at most 10 refusal lines a second.
func TestRefusalLogRateLimited(t *testing.T) {
	te := newTLSEnv(t, "")
	start := time.Now()
	// 40 refusals at once, so that they land within a second or two.
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			raw, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", te.port), 5*time.Second)
			if err != nil {
				return
			}
			defer raw.Close()
			c := tls.Client(raw, &tls.Config{ServerName: "bootstrap.nope." + sniDomain, InsecureSkipVerify: true})
			c.SetDeadline(time.Now().Add(3 * time.Second))
			_ = c.Handshake()
		}()
	}
	wg.Wait()
	lines := 0
	drain := func() {
		for {
			select {
			case l := <-te.logs.ch:
				if strings.Contains(l, "kafka connection refused") {
					lines++
				}
				continue
			default:
			}
			return
		}
	}
	waitUntil(t, 10*time.Second, "a refusal line", func() bool { drain(); return lines > 0 })
	drain()
	// 10 lines per second at most: the lines counted were written between
	// start and now, at most this many one-second windows.
	windows := int(time.Since(start)/time.Second) + 2
	if lines == 0 || lines > 10*windows || (windows*10 < 40 && lines >= 40) {
		t.Fatalf("%d refusal lines for 40 refusals over %d windows", lines, windows)
	}
}

// S2: a certificate removed from auth.mtls.clients is revoked on reload:
// its connection is closed at its next request.
func TestMTLSRevokedOnReload(t *testing.T) {
	te := newTLSEnv(t, "")
	prod := te.certClient("billing", kgo.DisableIdempotentWrite(), kgo.RecordRetries(1), kgo.RecordDeliveryTimeout(4*time.Second))
	produceN(t, prod, "orders", 2, "before")
	path := filepath.Join(te.dir, "flexway.yaml")
	b, _ := os.ReadFile(path)
	s := strings.Replace(string(b), `subject: "CN=billing-app"`, `subject: "CN=someone-else"`, 1)
	must(t, os.WriteFile(path, []byte(s), 0o600))
	snap, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := te.e.Reload(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("after")}).FirstErr(); err == nil {
		t.Fatal("a produce with the rebound certificate succeeded")
	}
	te.waitLog(5*time.Second, "credential revoked on reload", "certificate")
}

// S3: a certificate's session ends at its NotAfter: the connection is closed then.
func TestMTLSSessionEndsAtNotAfter(t *testing.T) {
	te := newTLSEnv(t, "")
	c, k := te.ca.issue(t, "billing-app", nil, true, time.Now().Add(2*time.Second))
	cert := keyPair(t, c, k)
	conn, err := te.dialer(&cert, tls.VersionTLS13, tls.VersionTLS13)(context.Background(), "tcp", te.boot)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The certificate's NotAfter as written (whole seconds: up to 1 s before
	// the time asked for), not counted from the dial.
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(6 * time.Second))
	_, err = io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the certificate's connection outlived its NotAfter")
	}
	if now := time.Now(); now.Before(leaf.NotAfter) {
		t.Fatalf("closed %v before NotAfter", leaf.NotAfter.Sub(now))
	}
	te.waitLog(3*time.Second, "session ended", "principal=billing")
}

// D4, invariant 11 over the TLS port: a TLS client that sends an acks=0
// Produce and closes (or resets) while its broker connection is still
// being dialled loses nothing: what it left is decrypted at its close and
// forwarded once the dial ends.
func TestTLSClientClosesWhileItsBrokerDials(t *testing.T) {
	k := newSecuredKafka(t, securedOpts{tls: true})
	te := newTLSEnvOn(t, k.upstream("", ""), "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
	mresp, err := mreq.RequestWith(ctx, te.saslClient("acme-app", tls.VersionTLS13))
	if err != nil {
		t.Fatal(err)
	}
	var leader string
	for _, p := range mresp.Topics[0].Partitions {
		for _, b := range mresp.Brokers {
			if p.Partition == 0 && b.NodeID == p.Leader {
				leader = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
			}
		}
	}
	closesWhileItsBrokerDials(t, k, te.e, "tls-",
		func() *rawConn {
			c, err := te.dialer(nil, tls.VersionTLS12, tls.VersionTLS13)(ctx, "tcp", leader)
			if err != nil {
				t.Fatalf("%s: %v", leader, err)
			}
			r := &rawConn{t: t, c: c}
			if hsr := r.saslPlain("acme-app", te.keys["acme-app"]); hsr.ErrorCode != 0 {
				t.Fatalf("handshake: %d", hsr.ErrorCode)
			}
			if aur := r.authAnswer(); aur.ErrorCode != 0 {
				t.Fatalf("authenticate: %d", aur.ErrorCode)
			}
			return r
		},
		func(c net.Conn) *net.TCPConn { return c.(*tls.Conn).NetConn().(*net.TCPConn) },
		func() *kgo.Client {
			return te.saslClient("acme-app", tls.VersionTLS13, kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		})
}
