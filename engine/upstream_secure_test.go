package engine

// The harness of the secured upstream tests (U1, U2, KIP-368): a kfake
// cluster behind TLS and SASL whose listeners count the connections and
// watch their sessions, the gateway in front of it, its upstream reloaded
// or loaded alone, and the checks the TLS, SASL and renewal tests share.

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// securedKafka is a kfake cluster behind TLS and SASL, as a managed Kafka
// service is: the gateway's upstream in these tests. Its listeners count
// the connections they accept and watch each one's requests (KIP-368: a
// request after the session's end is a violation, the connection closed
// as Kafka does).
type securedKafka struct {
	t        *testing.T
	c        *kfake.Cluster
	dir      string
	ca       *testCA
	mech     string // "" without SASL
	user     string
	pass     string
	lifetime time.Duration // connections.max.reauth.ms, 0: none

	accepted   atomic.Int64
	saslAuths  atomic.Int64 // SaslAuthenticate requests read
	renewals   atomic.Int64 // SaslHandshake requests on an authenticated connection
	violations atomic.Int64 // requests read after their session's end

	// stalls: the brokers' listeners; stall(true) stops every read of
	// their connections, a new one's TLS handshake among them.
	mu     sync.Mutex
	stalls []*stallListener
}

// stall stops (true) or resumes every read of the brokers' connections.
func (k *securedKafka) stall(v bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, l := range k.stalls {
		l.stall(v)
	}
}

type securedOpts struct {
	tls      bool
	mech     string // PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; "": none
	lifetime time.Duration
}

func newSecuredKafka(t *testing.T, o securedOpts) *securedKafka {
	t.Helper()
	k := &securedKafka{t: t, dir: t.TempDir(), mech: o.mech, user: "flexway", pass: "pw-" + randomHex(t, 8), lifetime: o.lifetime}
	opts := []kfake.Opt{
		kfake.NumBrokers(embeddedNodeCount),
		kfake.SeedTopics(2, "acme.orders", "acme.payments", "globex.orders", "globex.payments"),
		kfake.ListenFn(func(network, addr string) (net.Listener, error) {
			_, port, _ := net.SplitHostPort(addr)
			ln, err := stallingListen(network, net.JoinHostPort("127.0.0.1", port))
			if err != nil {
				return nil, err
			}
			k.mu.Lock()
			k.stalls = append(k.stalls, ln)
			k.mu.Unlock()
			return &watchListener{Listener: ln, k: k}, nil
		}),
	}
	if o.tls {
		k.ca = newTestCA(t, "kafka test CA")
		cert, key := k.ca.issue(t, "kafka", []string{"kafka.test"}, false, time.Now().Add(24*time.Hour))
		opts = append(opts, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{keyPair(t, cert, key)}, MinVersion: tls.VersionTLS12}))
		writeFile(t, k.dir, "ca.crt", k.ca.pem)
		// A client certificate, for the mTLS form of the configuration.
		ccert, ckey := k.ca.issue(t, "flexway", nil, true, time.Now().Add(24*time.Hour))
		writeFile(t, k.dir, "client.crt", ccert)
		writeFile(t, k.dir, "client.key", ckey)
	}
	if o.mech != "" {
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser(o.mech, k.user, k.pass))
		writeFile(t, k.dir, "password", []byte(k.pass+"\n"))
	}
	if o.lifetime > 0 {
		opts = append(opts, kfake.BrokerConfigs(map[string]string{"connections.max.reauth.ms": strconv.FormatInt(o.lifetime.Milliseconds(), 10)}))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	k.c = c
	return k
}

// upstream is the lines of upstreams.events for this cluster; tlsLine and
// saslLine replace the default ones when not empty ("-": none).
func (k *securedKafka) upstream(tlsLine, saslLine string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "    brokers: [%s]\n", quoteAll(k.c.ListenAddrs()))
	if tlsLine == "" && k.ca != nil {
		tlsLine = fmt.Sprintf("{ ca_file: %q, server_name: kafka.test }", filepath.Join(k.dir, "ca.crt"))
	}
	if tlsLine != "" && tlsLine != "-" {
		b.WriteString("    tls: " + tlsLine + "\n")
	}
	if saslLine == "" && k.mech != "" {
		saslLine = fmt.Sprintf("{ mechanism: %s, username: %s, password: %q }", k.mech, k.user, "file:"+filepath.Join(k.dir, "password"))
	}
	if saslLine != "" && saslLine != "-" {
		b.WriteString("    sasl: " + saslLine + "\n")
	}
	return b.String()
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// direct is a client of the cluster itself, with the gateway's credentials.
func (k *securedKafka) direct(opts ...kgo.Opt) *kgo.Client {
	base := []kgo.Opt{kgo.SeedBrokers(k.c.ListenAddrs()...)}
	if k.ca != nil {
		base = append(base, kgo.DialTLSConfig(&tls.Config{RootCAs: k.ca.pool(), ServerName: "kafka.test"}))
	}
	switch k.mech {
	case "PLAIN":
		base = append(base, kgo.SASL(plain.Auth{User: k.user, Pass: k.pass}.AsMechanism()))
	case "SCRAM-SHA-256":
		base = append(base, kgo.SASL(scram.Auth{User: k.user, Pass: k.pass}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		base = append(base, kgo.SASL(scram.Auth{User: k.user, Pass: k.pass}.AsSha512Mechanism()))
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		k.t.Fatal(err)
	}
	k.t.Cleanup(cl.Close)
	return cl
}

// watchListener counts the connections a broker accepts and watches what
// they carry.
type watchListener struct {
	net.Listener
	k *securedKafka
}

func (l *watchListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.k.accepted.Add(1)
	if l.k.lifetime > 0 && l.k.ca == nil { // clear text: its requests can be read
		return &watchConn{Conn: c, k: l.k}, nil
	}
	return c, nil
}

// watchConn reads the requests a broker connection carries (clear text):
// the SaslAuthenticate ones open a session of k.lifetime; any other
// request after its end is a violation, and the connection is closed, as
// Kafka closes it (KIP-368).
type watchConn struct {
	net.Conn
	k       *securedKafka
	mu      sync.Mutex
	head    []byte // the head of the next request, not whole yet
	skip    int    // bytes of the current request still to pass
	authed  time.Time
	expired bool
}

func (c *watchConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	b := p[:n]
	for len(b) > 0 {
		if c.skip > 0 {
			m := min(c.skip, len(b))
			c.skip -= m
			b = b[m:]
			continue
		}
		m := min(6-len(c.head), len(b))
		c.head = append(c.head, b[:m]...)
		b = b[m:]
		if len(c.head) < 6 {
			break
		}
		size := int(binary.BigEndian.Uint32(c.head))
		c.request(int16(binary.BigEndian.Uint16(c.head[4:])))
		c.skip = size - 2
		c.head = c.head[:0]
	}
	expired := c.expired
	c.mu.Unlock()
	if expired {
		_ = c.Conn.Close()
		return 0, net.ErrClosed
	}
	return n, err
}

func (c *watchConn) request(key int16) {
	switch key {
	case 17: // SaslHandshake
		if !c.authed.IsZero() {
			c.k.renewals.Add(1)
		}
	case 36: // SaslAuthenticate
		c.k.saslAuths.Add(1)
		c.authed = time.Now()
	default:
		if !c.authed.IsZero() && time.Since(c.authed) > c.k.lifetime {
			c.k.violations.Add(1)
			c.expired = true
		}
	}
}

// secureEnv boots the gateway in front of k, the upstream lines given.
func secureEnv(t *testing.T, lines string) *testEnv {
	t.Helper()
	return newTestEnvWith(t, envConfig{upstream: lines})
}

// reloadReplacing replaces the first old of env's flexway.yaml (lines of
// upstreams.events, of listeners.kafka...) by lines, and reloads.
func reloadReplacing(t *testing.T, env *testEnv, old, lines string) {
	t.Helper()
	path := filepath.Join(env.dir, "flexway.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), old, lines, 1)
	must(t, os.WriteFile(path, []byte(s), 0o600))
	snap, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.e.Reload(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
}

// loadWithUpstream loads a minimal configuration whose upstream is lines.
func loadWithUpstream(t *testing.T, lines string) *configs.Snapshot {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`version: 1
contracts:
  asyncapi: ./asyncapi.yaml
upstreams:
  events:
    protocol: kafka
    timeout: 2s
%sauth:
  api_keys:
    store: "file:./api-keys.yaml"
listeners:
  kafka:
    plaintext:
      mesh_only: true
      bind_host: 127.0.0.1
      advertised_host: 127.0.0.1
      clusters:
        shop: { ports: { from: %d, to: %d } }
`, lines, 0, 0)
	base := testkit.FreePorts(t, 4)
	cfg = strings.Replace(cfg, "from: 0, to: 0", fmt.Sprintf("from: %d, to: %d", base, base+3), 1)
	must(t, os.WriteFile(filepath.Join(dir, "flexway.yaml"), []byte(cfg), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "asyncapi.yaml"), []byte(testContract), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "api-keys.yaml"), []byte("keys: []\n"), 0o600))
	snap, err := configs.Load(filepath.Join(dir, "flexway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// produceConsume produces n records to orders through the gateway as
// acme-app, and reads them back in order through it.
func produceConsume(t *testing.T, env *testEnv, n int, tag string) {
	t.Helper()
	p := env.client("acme-app")
	produceN(t, p, "orders", n, tag)
	c := env.client("acme-app", kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := consumeAll(t, c, n, 20*time.Second)
	seen := map[string]bool{}
	for _, r := range got {
		if strings.HasPrefix(string(r.Value), tag+"-") {
			seen[string(r.Value)] = true
		}
	}
	if len(seen) != n {
		t.Fatalf("read %d of the %d records produced through the gateway", len(seen), n)
	}
}

// countBrokerConns checks U2 with TLS and SASL: each client connection
// that reaches a broker gets a broker connection of its own, counted at
// the broker.
func countBrokerConns(t *testing.T, env *testEnv, k *securedKafka) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", env.nodePort(env.nodes()[0]))
	servedOrders(t, dialRaw(t, addr, "acme-app", env.keys["acme-app"])) // any first-connection work done
	before := k.accepted.Load()
	const n = 3
	for i := 0; i < n; i++ {
		servedOrders(t, dialRaw(t, addr, "acme-app", env.keys["acme-app"]))
	}
	if got := k.accepted.Load() - before; got != n {
		t.Fatalf("%d client connections served: the broker accepted %d connections, want %d (one each, never shared)", n, got, n)
	}
}
