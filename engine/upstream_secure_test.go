package engine

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/flexway/flexway/engine/conn"
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
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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
			ln, err := net.Listen(network, net.JoinHostPort("127.0.0.1", port))
			if err != nil {
				return nil, err
			}
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

// reloadUpstream rewrites upstreams.events of env's flexway.yaml and
// reloads.
func reloadUpstream(t *testing.T, env *testEnv, old, lines string) {
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

// U1: the gateway reaches a broker over TLS (its CA, its name) with
// SCRAM-SHA-512: records are produced and read back through it; each
// client connection has its own broker connection (U2).
func TestUpstreamTLSAndSCRAM512(t *testing.T) {
	k := newSecuredKafka(t, securedOpts{tls: true, mech: "SCRAM-SHA-512"})
	env := secureEnv(t, k.upstream("", ""))
	produceConsume(t, env, 20, "tls-scram")
	// The broker holds them under the physical name.
	cl := k.direct(kgo.ConsumeTopics("acme.orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if got := consumeAll(t, cl, 20, 10*time.Second); len(got) < 20 {
		t.Fatalf("the broker holds %d records in acme.orders, want 20", len(got))
	}
	countBrokerConns(t, env, k)

	// Answers of many TLS records, relayed as they arrive (a Fetch
	// larger than one unit): byte for byte.
	big := env.client("acme-app", kgo.ProducerBatchMaxBytes(2<<20))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := map[string]string{}
	for i := 0; i < 4; i++ {
		v := strings.Repeat(randomHex(t, 16), 12<<10) // 384 KiB
		key := fmt.Sprintf("big-%d", i)
		want[key] = v
		if err := big.ProduceSync(ctx, &kgo.Record{Topic: "orders", Key: []byte(key), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	rd := env.client("acme-app", kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(4<<20))
	got := 0
	for _, r := range consumeAll(t, rd, 20+len(want), 20*time.Second) {
		if v, ok := want[string(r.Key)]; ok {
			if string(r.Value) != v {
				t.Fatalf("record %s read back altered (%d bytes, want %d)", r.Key, len(r.Value), len(v))
			}
			got++
		}
	}
	if got != len(want) {
		t.Fatalf("read back %d large records of %d", got, len(want))
	}
}

// U1: TLS alone, the gateway presenting a client certificate (mTLS).
func TestUpstreamTLSClientCertificate(t *testing.T) {
	k := newSecuredKafka(t, securedOpts{tls: true})
	line := fmt.Sprintf("{ ca_file: %q, cert_file: %q, key_file: %q, server_name: kafka.test }",
		filepath.Join(k.dir, "ca.crt"), filepath.Join(k.dir, "client.crt"), filepath.Join(k.dir, "client.key"))
	env := secureEnv(t, k.upstream(line, ""))
	produceConsume(t, env, 10, "mtls")
	countBrokerConns(t, env, k)
}

// U1: SASL PLAIN in clear text, and SCRAM-SHA-256.
func TestUpstreamSASLPlainAndSCRAM256(t *testing.T) {
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256"} {
		t.Run(mech, func(t *testing.T) {
			k := newSecuredKafka(t, securedOpts{mech: mech})
			env := secureEnv(t, k.upstream("", ""))
			produceConsume(t, env, 10, mech)
			countBrokerConns(t, env, k)
		})
	}
}

// A broker certificate of another CA, or for another name: the gateway
// does not start on it (its control client), and once started, a dial
// that meets one fails, logged with the upstream and the broker, the
// client closed at once, never a key in the line.
func TestUpstreamTLSRefusedCertificate(t *testing.T) {
	k := newSecuredKafka(t, securedOpts{tls: true, mech: "SCRAM-SHA-512"})
	other := newTestCA(t, "another CA")
	otherCA := writeFile(t, k.dir, "other-ca.crt", other.pem)
	good := k.upstream("", "")
	for _, tc := range []struct {
		name, line, why string
	}{
		{"another CA", fmt.Sprintf("{ ca_file: %q, server_name: kafka.test }", otherCA), "certificate signed by unknown authority"},
		{"another name", fmt.Sprintf("{ ca_file: %q, server_name: kafka.example }", filepath.Join(k.dir, "ca.crt")), "kafka.example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := k.upstream(tc.line, "")
			// At start: refused, naming the upstream.
			snap := loadWithUpstream(t, bad)
			if _, err := New(context.Background(), snap); err == nil || !strings.Contains(err.Error(), "events") || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("New = %v, want a refusal naming the upstream and %q", err, tc.why)
			}

			// Once started: the dial fails.
			running := secureEnv(t, good)
			reloadUpstream(t, running, good, bad)
			node := running.nodes()[0]
			r := dialRaw(t, fmt.Sprintf("127.0.0.1:%d", running.nodePort(node)), "acme-app", running.keys["acme-app"])
			metadataOrders(r)
			r.resetWithoutAnswer(10 * time.Second)
			line := running.waitLog(10*time.Second, "kafka connection closed: broker unreachable", "upstream=events", "broker="+strconv.Itoa(int(node)), tc.why)
			if strings.Contains(line, "PRIVATE KEY") || strings.Contains(line, k.pass) {
				t.Fatalf("the log line holds a secret: %s", line)
			}
		})
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

// A wrong password (PLAIN or SCRAM-SHA-512): the gateway does not start on
// it; once started (a reload reads the password file again), the client
// whose request needed the broker is reset at once (invariant 43), not held, and the
// gateway logs "kafka upstream authentication failed" with the upstream's
// name, never the password. The right password back, a client is served.
func TestUpstreamWrongPassword(t *testing.T) {
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			k := newSecuredKafka(t, securedOpts{tls: mech == "SCRAM-SHA-512", mech: mech})
			const wrong = "not-the-password"
			wrongFile := writeFile(t, k.dir, "wrong-password", []byte(wrong+"\n"))
			good := k.upstream("", "")
			bad := k.upstream("", fmt.Sprintf("{ mechanism: %s, username: %s, password: %q }", mech, k.user, "file:"+wrongFile))

			if _, err := New(context.Background(), loadWithUpstream(t, bad)); err == nil || !strings.Contains(err.Error(), "events") ||
				strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), k.pass) {
				t.Fatalf("New with a wrong password = %v, want a refusal naming the upstream, without the password", err)
			}

			env := secureEnv(t, good)
			reloadUpstream(t, env, good, bad)
			node := env.nodes()[0]
			addr := fmt.Sprintf("127.0.0.1:%d", env.nodePort(node))
			r := dialRaw(t, addr, "acme-app", env.keys["acme-app"])
			metadataOrders(r)
			r.resetWithoutAnswer(10 * time.Second)
			line := env.waitLog(10*time.Second, "kafka upstream authentication failed", "upstream=events", "broker="+strconv.Itoa(int(node)))
			if strings.Contains(line, wrong) || strings.Contains(line, k.pass) {
				t.Fatalf("the log line holds the password: %s", line)
			}
			if !strings.Contains(line, "level=ERROR") {
				t.Errorf("logged at another level than Error: %s", line)
			}

			// Meanwhile a client is told, as a broker refusing it would:
			// its authentication fails (SASL_AUTHENTICATION_FAILED, fatal to
			// the Java client), at once rather than after its timeouts.
			cl := env.client("acme-app")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			began := time.Now()
			req := kmsg.NewPtrMetadataRequest()
			req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
			if _, err := req.RequestWith(ctx, cl); !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("Metadata with the gateway's password refused: %v, want SASL_AUTHENTICATION_FAILED", err)
			}
			if took := time.Since(began); took > 10*time.Second {
				t.Fatalf("the client was told after %v", took)
			}

			reloadUpstream(t, env, bad, good)
			servedOrders(t, dialRaw(t, addr, "acme-app", env.keys["acme-app"]))
		})
	}
}

// KIP-368: a broker that announces a session lifetime gets a new SASL
// exchange on each broker connection before the session ends; a producer
// and a consumer running across several lifetimes lose nothing, see
// nothing twice, in order, and the broker never reads a request past a
// session's end (it would close the connection, as Kafka does).
func TestUpstreamReauthentication(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		name := "clear text"
		if useTLS {
			name = "TLS"
		}
		t.Run(name, func(t *testing.T) { reauthRun(t, useTLS) })
	}
}

func reauthRun(t *testing.T, useTLS bool) {
	const lifetime = 3 * time.Second
	k := newSecuredKafka(t, securedOpts{tls: useTLS, mech: "SCRAM-SHA-512", lifetime: lifetime})
	// Under TLS the listener cannot read the requests: the broker counts
	// the handshakes (the renewals are those past one per connection).
	var handshakes atomic.Int64
	k.c.ControlKey(17, func(kmsg.Request) (kmsg.Response, error, bool) {
		handshakes.Add(1)
		return nil, nil, false
	})
	env := secureEnv(t, k.upstream("", ""))
	p := env.client("acme-app", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	c := env.client("acme-app", kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var produced int
	end := time.Now().Add(3*lifetime + time.Second)
	for i := 0; time.Now().Before(end); i++ {
		// Idle gaps longer than a session's renewal point, and bursts.
		if i%40 == 39 {
			time.Sleep(lifetime)
		}
		r := &kgo.Record{Topic: "orders", Partition: 0, Value: []byte(strconv.Itoa(i))}
		if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		produced++
		time.Sleep(20 * time.Millisecond)
	}
	got := consumeAll(t, c, produced, 20*time.Second)
	next := 0
	for _, r := range got {
		if r.Partition != 0 {
			continue
		}
		if string(r.Value) != strconv.Itoa(next) {
			t.Fatalf("record %d reads %q: lost, doubled or out of order", next, r.Value)
		}
		next++
	}
	if next != produced {
		t.Fatalf("read %d records of %d", next, produced)
	}
	if v := k.violations.Load(); v != 0 {
		t.Fatalf("the broker read %d requests after their session's end", v)
	}
	// The producer's and the consumer's connections ran across three
	// lifetimes: each renewed its session, more than once.
	renewals := k.renewals.Load()
	if useTLS {
		renewals = handshakes.Load() - k.accepted.Load()
	}
	if renewals < 4 {
		t.Fatalf("%d sessions renewed, want the producer's and the consumer's, more than once", renewals)
	}
	if env.e.m.Panics() != 0 {
		t.Fatal("a panic in a callback")
	}
}

// Invariant 20 under upstream TLS: a paused broker connection keeps its
// record layer (looptls) over its handle; nothing crosses while paused,
// the answer is decrypted once resumed, on the same loop.
func TestPauseBrokerConnectionTLS(t *testing.T) {
	k := newSecuredKafka(t, securedOpts{tls: true, mech: "SCRAM-SHA-512"})
	env := secureEnv(t, k.upstream("", ""))
	r := dialRaw(t, leaderOf0(t, env), "acme-app", env.keys["acme-app"])
	defer r.c.Close()
	cl := clientOf(t, env.e, r)
	r.send(emptyFetch(0)) // dials the broker
	resp := kmsg.FetchResponse{Version: 11}
	r.recv(&resp)
	var p *conn.Conn
	onLoopOf(t, cl, func() {
		if cl.up.conn.rec == nil {
			t.Error("the broker connection has no TLS record layer")
		}
		p = pauseUp(cl.up.conn)
	})
	if p == nil {
		t.Fatal("not paused")
	}
	waitState(t, cl, p, rpPaused)
	r.send(emptyFetch(0))
	_ = r.c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	var one [1]byte
	if _, err := r.c.Read(one[:]); err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("an answer crossed a paused broker connection (%v)", err)
	}
	onLoopOf(t, cl, resume(p))
	waitState(t, cl, p, rpAttached)
	r.recv(&resp)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 {
		t.Fatalf("the answer after the resume: %+v", resp)
	}
	onLoopOf(t, cl, func() {
		if cl.up.conn.rec == nil || p.EventLoop() != cl.c.EventLoop() {
			t.Error("the broker connection lost its record layer, or came back on another loop")
		}
	})
	servedOrders(t, r)
}

// KIP-368 against Apache Kafka (make test-kafka, FLEXWAY_TEST_KAFKA_SECURITY
// =sasl_ssl: the SASL_SSL listener's sessions last 30 s): a producer's
// connections held across more than two sessions, busy and idle, lose
// nothing, in order, and the broker never closes a broker connection for a
// session that ended.
func TestRealKafkaReauthentication(t *testing.T) {
	if _, real := realKafka(); !real || os.Getenv(envKafkaSecurity) != "sasl_ssl" {
		t.Skip("against Apache Kafka's SASL_SSL listener only (make test-kafka)")
	}
	env := newTestEnv(t, "")
	p := env.client("acme-app", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	produced := 0
	// The renewals done on the gateway's broker connections, and whether
	// the broker announced a lifetime at all (else none is needed).
	renewals := func() (n int, announced bool) {
		var mu sync.Mutex
		onLoops(t, env.e, func(l *loop) {
			mu.Lock()
			defer mu.Unlock()
			for cl := range l.clients {
				if cl.up.conn != nil && cl.up.conn.sec != nil {
					n += cl.up.conn.sec.renews
					announced = announced || !cl.up.conn.sec.renewBy.IsZero()
				}
			}
		})
		return n, announced
	}
	end := time.Now().Add(70 * time.Second)
	for i := 0; time.Now().Before(end); i++ {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 0, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		produced++
		if i == 5 {
			if _, announced := renewals(); !announced {
				t.Fatal("the broker announced no session lifetime: the listener's connections.max.reauth.ms is not in force")
			}
		}
		if i%20 == 19 {
			time.Sleep(12 * time.Second) // idle past a renewal point
		} else {
			time.Sleep(250 * time.Millisecond)
		}
	}
	c := env.client("acme-app", kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	next := 0
	for _, r := range consumeAll(t, c, produced, 30*time.Second) {
		if r.Partition != 0 {
			continue
		}
		if string(r.Value) != strconv.Itoa(next) {
			t.Fatalf("record %d reads %q", next, r.Value)
		}
		next++
	}
	if next != produced {
		t.Fatalf("read %d records of %d", next, produced)
	}
	// A connection renews at its first request past its renewal point
	// (26 s here): with the idle gaps, once or twice in 70 s.
	if n, _ := renewals(); n < 1 {
		t.Fatalf("no session renewed on the producer's broker connections in 70 s of 30 s sessions")
	}
	for {
		select {
		case line := <-env.logs.ch:
			if strings.Contains(line, "broker connection ended") || strings.Contains(line, "kafka upstream authentication failed") {
				t.Fatalf("a broker connection ended: %s", line)
			}
			continue
		default:
		}
		break
	}
}

// A wrong password against Apache Kafka (make test-kafka, the SASL modes):
// after a reload reads the wrong one, the client is reset at once
// (invariant 43) and the gateway logs "kafka upstream authentication
// failed", then clients are told SASL_AUTHENTICATION_FAILED; the right one
// back, a client is served.
func TestRealKafkaWrongPassword(t *testing.T) {
	sec := os.Getenv(envKafkaSecurity)
	if _, real := realKafka(); !real || (sec != "sasl_ssl" && sec != "sasl_plaintext") {
		t.Skip("against Apache Kafka's SASL listeners only (make test-kafka)")
	}
	env := newTestEnv(t, "")
	pwFile := filepath.Join(env.dir, "kafka-password")
	good, err := os.ReadFile(pwFile)
	if err != nil {
		t.Fatal(err)
	}
	reload := func(pw []byte) {
		must(t, os.WriteFile(pwFile, pw, 0o600))
		snap, err := configs.Load(filepath.Join(env.dir, "flexway.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := env.e.Reload(context.Background(), snap); err != nil {
			t.Fatal(err)
		}
	}
	const wrong = "not-the-password"
	reload([]byte(wrong + "\n"))
	node := env.nodes()[0]
	addr := fmt.Sprintf("127.0.0.1:%d", env.nodePort(node))
	r := dialRaw(t, addr, "acme-app", env.keys["acme-app"])
	metadataOrders(r)
	r.resetWithoutAnswer(15 * time.Second)
	line := env.waitLog(15*time.Second, "kafka upstream authentication failed", "upstream=events")
	if strings.Contains(line, wrong) || strings.Contains(line, strings.TrimSpace(string(good))) {
		t.Fatalf("the log line holds a password: %s", line)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	if _, err := req.RequestWith(ctx, env.client("acme-app")); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("Metadata with the gateway's password refused: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	reload(good)
	servedOrders(t, dialRaw(t, addr, "acme-app", env.keys["acme-app"]))
}
