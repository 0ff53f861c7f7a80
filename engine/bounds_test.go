package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dialPlain connects without authenticating.
func dialPlain(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c}
}

// dialRefused dials addr, which the gateway refuses at accept, and waits
// for the refusal in whichever form the kernel shows it: the connect fails
// (a reset that came before connect returned, or refused), or it succeeds
// and the first read meets EOF or a reset. A byte of answer, another dial
// error, or the connection still open after within fails the test.
func dialRefused(t *testing.T, addr string, within time.Duration) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, within)
	if err != nil {
		if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) {
			return
		}
		t.Fatalf("dial %s: %v, want a refusal", addr, err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(within))
	n, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("connection still open after %v", within)
	}
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read: %v, want EOF or a reset", err)
	}
	if n != 0 {
		t.Fatalf("answered %d bytes before the refusal", n)
	}
}

// expectClosed waits until the gateway closes the connection.
func (r *rawConn) expectClosed(d time.Duration) time.Duration {
	r.t.Helper()
	start := time.Now()
	r.c.SetReadDeadline(start.Add(d))
	_, err := io.Copy(io.Discard, r.c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		r.t.Fatalf("connection still open after %v", d)
	}
	return time.Since(start)
}

func (r *rawConn) writeRaw(b []byte) {
	r.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = r.c.Write(b)
}

// L3: before authentication a request may be 64 KiB at most: 64 KiB passes the framing, one byte more closes.
func TestRequestBoundBeforeAuth(t *testing.T) {
	env := newTestEnv(t, "")
	over := dialPlain(t, env.boot)
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], 64<<10+1)
	over.writeRaw(hdr[:])
	over.expectClosed(5 * time.Second)
	env.waitLog(3*time.Second, "kafka connection refused", "request larger than allowed before authentication")

	// At the bound: a 64 KiB ApiVersions (padded client software name) is answered.
	at := dialPlain(t, env.boot)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = "t"
	req.ClientSoftwareVersion = "1"
	frame := func() []byte {
		b := []byte{0, 0, 0, 0}
		b = codec.AppendRequestHeader(b, 18, 3, 1, []byte("c"), false, true)
		b = req.AppendTo(b)
		codec.PutSize(b, len(b)-4)
		return b
	}
	for n := 64<<10 - len(frame()) + 4; n > 0; n-- { // the length prefix grows with the name
		req.ClientSoftwareName = string(bytes.Repeat([]byte("x"), len("t")+n))
		if len(frame())-4 <= 64<<10 {
			break
		}
	}
	b := frame()
	if len(b)-4 != 64<<10 {
		t.Fatalf("frame of %d bytes, want exactly 64 KiB", len(b)-4)
	}
	at.writeRaw(b)
	var resp kmsg.ApiVersionsResponse
	resp.Version = 3
	at.recv(&resp)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("ApiVersions at the bound: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
}

// L3 / ARCHITECTURE: a TLS client on the plaintext port is named as such.
func TestTLSClientOnPlaintextPort(t *testing.T) {
	env := newTestEnv(t, "")
	r := dialPlain(t, env.boot)
	r.writeRaw([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03})
	r.expectClosed(5 * time.Second)
	env.waitLog(3*time.Second, "kafka connection refused", "a TLS client on a plaintext port")
}

// L3: after authentication, max_request_bytes bounds a request (1 MiB here).
func TestRequestBoundAfterAuth(t *testing.T) {
	env := newTestEnv(t, "    max_request_bytes: 1MiB\n")
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], 1<<20+1)
	r.writeRaw(hdr[:])
	r.expectClosed(5 * time.Second)
	env.waitLog(3*time.Second, "request larger than max_request_bytes", "tenant=acme")

	// At the bound, a 1 MiB Produce passes.
	prod := env.client("acme-app", kgo.ProducerBatchMaxBytes(1<<20-200), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: bytes.Repeat([]byte("v"), 900<<10)}).FirstErr(); err != nil {
		t.Fatalf("a produce under max_request_bytes: %v", err)
	}
}

// I5: nothing but ApiVersions and SASL is served before authentication.
func TestOnlySASLBeforeAuth(t *testing.T) {
	env := newTestEnv(t, "")
	r := dialPlain(t, env.boot)
	r.send(kmsg.NewPtrMetadataRequest())
	r.expectClosed(5 * time.Second)
	env.waitLog(3*time.Second, "kafka connection refused", "request before authentication")
}

// I5: a mechanism not served is UNSUPPORTED_SASL_MECHANISM, with the served ones listed.
func TestUnsupportedMechanism(t *testing.T) {
	env := newTestEnv(t, "")
	for _, mech := range []string{"SCRAM-SHA-256", "GSSAPI", "OAUTHBEARER"} {
		resp := dialPlain(t, env.boot).handshake(mech)
		if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(resp.SupportedMechanisms) != 1 || resp.SupportedMechanisms[0] != "PLAIN" {
			t.Fatalf("%s: error %d, mechanisms %v", mech, resp.ErrorCode, resp.SupportedMechanisms)
		}
	}
}

// D2: ApiVersions is the intersection with the brokers and the caps; a
// version the gateway does not know gets the KIP-511 answer.
func TestApiVersions(t *testing.T) {
	env := newTestEnv(t, "")
	r := dialPlain(t, env.boot)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "t", "1"
	r.send(req)
	var resp kmsg.ApiVersionsResponse
	resp.Version = 3
	r.recv(&resp)
	got := map[int16]kmsg.ApiVersionsResponseApiKey{}
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = k
	}
	caps := map[int16]int16{0: 12, 1: 12, 3: 12}
	for k, max := range caps {
		if got[k].MaxVersion > max || got[k].MaxVersion == 0 {
			t.Fatalf("%s announced up to v%d, cap v%d", kmsg.NameForKey(k), got[k].MaxVersion, max)
		}
	}
	if got[1].MinVersion < 4 || got[3].MinVersion < 1 {
		t.Fatalf("Fetch from v%d, Metadata from v%d", got[1].MinVersion, got[3].MinVersion)
	}
	for _, never := range []int16{29, 30, 33, 38, 48, 50, 68, 71, 76} {
		if _, ok := got[never]; ok {
			t.Fatalf("%s is announced", kmsg.NameForKey(never))
		}
	}
	// The broker's own Produce minimum is kept (librdkafka reads a raised one as "no compression").
	direct := env.directClient()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dv, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range dv.ApiKeys {
		if k.ApiKey == 0 && got[0].MinVersion != k.MinVersion {
			t.Fatalf("Produce minimum v%d, the broker's is v%d", got[0].MinVersion, k.MinVersion)
		}
	}

	// KIP-511: an unknown ApiVersions version.
	r2 := dialPlain(t, env.boot)
	b := []byte{0, 0, 0, 0}
	b = codec.AppendRequestHeader(b, 18, 99, 7, []byte("c"), false, false)
	codec.PutSize(b, len(b)-4)
	r2.writeRaw(b)
	var old kmsg.ApiVersionsResponse
	old.Version = 0
	r2.recv(&old)
	if old.ErrorCode != kerr.UnsupportedVersion.Code || len(old.ApiKeys) != 1 || old.ApiKeys[0].ApiKey != 18 {
		t.Fatalf("KIP-511 answer: error %d, keys %+v", old.ErrorCode, old.ApiKeys)
	}
}

// D1: a never-announced API disconnects the client, and does not reach the broker.
func TestNeverAnnouncedDisconnects(t *testing.T) {
	env := newTestEnv(t, "")
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	r.send(kmsg.NewPtrDescribeACLsRequest())
	r.expectClosed(5 * time.Second)
	env.waitLog(3*time.Second, "request refused", "never announced")
}

// L3: auth_timeout is absolute: a client that never authenticates is closed at it.
func TestAuthTimeout(t *testing.T) {
	env := newTestEnv(t, "    auth_timeout: 1s\n")
	// Counted from before the dial: the gateway's clock starts at its
	// accept, never before; from after it, a test stalled between the
	// dial and the count would see the close early.
	start := time.Now()
	r := dialPlain(t, env.boot)
	// Keep sending ApiVersions: activity does not extend the deadline.
	go func() {
		b := []byte{0, 0, 0, 0}
		b = codec.AppendRequestHeader(b, 18, 0, 1, []byte("c"), false, false)
		codec.PutSize(b, len(b)-4)
		for i := 0; i < 6; i++ {
			r.c.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := r.c.Write(b); err != nil {
				return
			}
			time.Sleep(300 * time.Millisecond)
		}
	}()
	r.expectClosed(6 * time.Second)
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("closed after %v, before auth_timeout", d)
	}
}

// L3: idle_timeout closes an authenticated connection that does nothing.
func TestIdleTimeout(t *testing.T) {
	env := newTestEnv(t, "    idle_timeout: 1s\n")
	start := time.Now() // before the authentication, the connection's last activity
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	r.expectClosed(6 * time.Second)
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("closed after %v, before idle_timeout", d)
	}
}

// L2: a node outside the fallback range is announced as
// broker-<id>.<cluster>.unmapped.invalid, and logged. On kfake the range
// maps nodes 0 and 1 and the upstream's node 2 is outside; a real broker
// has one node (1), so the range starts at node 5 and maps none of it.
func TestUnmappedBroker(t *testing.T) {
	ec := envConfig{nports: 3} // the bootstrap and two brokers
	if _, real := realKafka(); real {
		first := int32(5)
		ec.firstNodeID = &first
	}
	env := newTestEnvWith(t, ec)
	nodes := env.nodes()
	unmapped := nodes[len(nodes)-1]
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	req.Topics = []kmsg.MetadataRequestTopic{}
	r.send(req)
	var resp kmsg.MetadataResponse
	resp.Version = 12
	r.recv(&resp)
	want := "broker-" + strconv.Itoa(int(unmapped)) + ".shop.unmapped.invalid"
	found := false
	for _, b := range resp.Brokers {
		if b.NodeID == unmapped {
			found = b.Host == want
		}
	}
	if !found || len(resp.Brokers) != len(nodes) {
		t.Fatalf("node %d announced as %+v, want %s among %d brokers", unmapped, resp.Brokers, want, len(nodes))
	}
	env.waitLog(3*time.Second, "outside the fallback range", "node="+strconv.Itoa(int(unmapped)))
}

// B1: max_connections_per_ip: at the bound a connection is served, one
// more is refused at once and counted. The refusal is a reset (invariant
// 43), which the dial may meet at connect or at its first read.
func TestConnectionsPerIP(t *testing.T) {
	env := newTestEnv(t, "    max_connections_per_ip: 3\n")
	var conns []*rawConn
	for i := 0; i < 3; i++ {
		conns = append(conns, dialRaw(t, env.boot, "acme-app", env.keys["acme-app"]))
	}
	dialRefused(t, env.boot, 5*time.Second) // reset at accept: at connect or at the first read
	env.waitLog(3*time.Second, "kafka connection refused", "bound=max_connections_per_ip")
	if n := env.e.env.Signals.RefusedBy("max_connections_per_ip"); n != 1 {
		t.Fatalf("refusals counted: %d", n)
	}
	conns[0].c.Close() // a place is given back, once the gateway saw the close
	waitUntil(t, 10*time.Second, "the closed connection released", func() bool { return env.e.env.Signals.Connections() == 2 })
	_ = dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
}

// B1 and invariant 43 with franz-go: a connection refused at once for
// max_unauthenticated_connections or max_connections_per_ip (a reconnect
// storm after a restart) is reset, not closed in order: franz-go takes an
// orderly close before its first answer for a misconfigured listener
// (ErrFirstReadEOF, "is TLS missing?") and fails the records it buffers;
// a reset it retries, and once a place is free its request is answered.
func TestConnectionBoundRefusalResets(t *testing.T) {
	for _, tc := range []struct{ bound, extra string }{
		{"max_unauthenticated_connections", "    max_unauthenticated_connections: 1\n    max_connections_per_ip: 0\n"},
		{"max_connections_per_ip", "    max_connections_per_ip: 1\n"},
	} {
		t.Run(tc.bound, func(t *testing.T) {
			env := newTestEnv(t, tc.extra+"    auth_timeout: 30s\n")
			holder := dialPlain(t, env.boot) // the one place, not authenticated
			waitUntil(t, 10*time.Second, "the first connection held", func() bool { return liveClients(env) == 1 })
			cl := env.client("acme-app", kgo.RequestRetries(0))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := cl.Ping(ctx)
			cancel()
			wantReset(t, err, "a connection past the bound")
			env.waitLog(3*time.Second, "kafka connection refused", "bound="+tc.bound)
			holder.c.Close() // the place is given back
			waitUntil(t, 10*time.Second, "the place given back", func() bool { return liveClients(env) == 0 })
			ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := cl.Ping(ctx); err != nil {
				t.Fatalf("once a place is free: %v", err)
			}
		})
	}
}

// B1: max_connections_per_tenant and max_connection_rate_per_tenant refuse
// at authentication with SASL_AUTHENTICATION_FAILED, and never another tenant.
func TestConnectionsPerTenant(t *testing.T) {
	env := newTestEnv(t, "    max_connections_per_tenant: 2\n")
	a1 := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	_ = dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	cl, _ := kgo.NewClient(kgo.SeedBrokers(env.boot), kgo.SASL(plainAuth("acme-orders-reader", env.keys["acme-orders-reader"])), kgo.RequestRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := cl.Ping(ctx)
	cancel()
	cl.Close()
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a third acme connection: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	env.waitLog(3*time.Second, "kafka authentication refused", "bound=max_connections_per_tenant", "tenant=acme")
	_ = dialRaw(t, env.boot, "globex-app", env.keys["globex-app"]) // another tenant is not disturbed
	a1.c.Close()
	// Once the gateway saw the close (and the refused client's): acme's
	// second connection and globex's are left.
	waitUntil(t, 10*time.Second, "the closed connection released", func() bool { return env.e.env.Signals.Connections() == 2 })
	_ = dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
}

// B1: max_connection_rate_per_tenant counts the new connections of one
// UTC second: of 5 in one second at a rate of 3, 2 are refused. The
// second a connection is counted in lies between its dial and its answer:
// a burst that a stalled machine spread over two seconds proves nothing
// and is tried again in a later second.
func TestConnectionRatePerTenant(t *testing.T) {
	env := newTestEnv(t, "    max_connection_rate_per_tenant: 3\n")
	for try := 1; ; try++ {
		// From the start of a second, so that the burst fits in it.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
		first := time.Now().Unix()
		refused := 0
		for i := 0; i < 5; i++ {
			c := dialPlain(t, env.boot)
			c.saslPlain("acme-app", env.keys["acme-app"])
			if c.authAnswer().ErrorCode == kerr.SaslAuthenticationFailed.Code {
				refused++
			}
		}
		if time.Now().Unix() != first {
			if try == 10 {
				t.Fatal("no burst of 5 connections within one second in 10 tries")
			}
			t.Logf("try %d: the burst spread over two seconds (%d refused), again", try, refused)
			continue
		}
		if refused != 2 {
			t.Fatalf("%d of 5 new connections in one second refused at a rate of 3, want 2", refused)
		}
		break
	}
	env.waitLog(3*time.Second, "kafka authentication refused", "bound=max_connection_rate_per_tenant")
}
