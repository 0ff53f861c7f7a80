package engine

// Hostile bytes: clients and brokers that do not follow the protocol.
// Each test says what the peer does, and checks that the gateway closes
// that connection alone, says why, and goes on serving the others.

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/engine/signals"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsFrame is an ApiVersions request of version v whose body is
// body as given (the header is right for v: flexible from v3).
func apiVersionsFrame(v int16, corr int32, body []byte) []byte {
	b := []byte{0, 0, 0, 0}
	b = codec.AppendRequestHeader(b, 18, v, corr, []byte("probe"), false, v >= 3)
	b = append(b, body...)
	codec.PutSize(b, len(b)-4)
	return b
}

// closedWithoutAnswer waits until the gateway closes r, and fails if it
// wrote anything first or took longer than within.
func (r *rawConn) closedWithoutAnswer(within time.Duration) {
	r.t.Helper()
	start := time.Now()
	_ = r.c.SetReadDeadline(start.Add(within))
	n, err := io.Copy(io.Discard, r.c)
	if err != nil {
		r.t.Fatalf("still open after %v (%v)", within, err)
	}
	if n != 0 {
		r.t.Fatalf("answered %d bytes before closing", n)
	}
}

// resetWithoutAnswer: the gateway resets the connection (RST) within
// within, without a byte of answer: a transient cause before the first
// answer (signals.CloseCause.Transient).
func (r *rawConn) resetWithoutAnswer(within time.Duration) {
	r.t.Helper()
	_ = r.c.SetReadDeadline(time.Now().Add(within))
	n, err := io.Copy(io.Discard, r.c)
	if !errors.Is(err, syscall.ECONNRESET) {
		r.t.Fatalf("want a reset within %v, got %v", within, err)
	}
	if n != 0 {
		r.t.Fatalf("answered %d bytes before the reset", n)
	}
}

// wantReset fails unless err, a franz-go request's, is a reset: never
// ErrFirstReadEOF, the orderly close before a first answer that franz-go
// takes for a misconfiguration and does not retry (invariant 43).
func wantReset(t *testing.T, err error, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: answered", what)
	}
	if _, ok := errors.AsType[*kgo.ErrFirstReadEOF](err); ok {
		t.Fatalf("%s: franz-go took it for a misconfiguration: %v", what, err)
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("%s: %v, want a reset", what, err)
	}
}

// The probe's first fault: an ApiVersions v3/v4 request with a malformed
// body (a tagged field of 0xFFFFFFFF bytes, bytes after the body) was
// answered in full and the connection held until auth_timeout. It is now
// closed at once, unanswered, with a rate-limited "kafka connection
// refused" naming the cause; a well-formed request and KIP-511's unknown
// version are answered as before.
func TestMalformedApiVersionsClosesAtOnce(t *testing.T) {
	env := newTestEnv(t, "    auth_timeout: 30s\n")
	sw := []byte{2, 'g', 2, '1'} // client_software_name "g", version "1" (compact)
	cases := []struct {
		name string
		v    int16
		body []byte
		err  string
	}{
		{"v3, a tag of 0xFFFFFFFF bytes", 3, append(sw[:4:4], 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f), "truncated"},
		{"v4, a tag of 0xFFFFFFFF bytes", 4, append(sw[:4:4], 1, 7, 0xff, 0xff, 0xff, 0xff, 0x0f, 'x'), "truncated"},
		{"v4, bytes after the body", 4, append(sw[:4:4], 0, 'j', 'u', 'n', 'k'), "trailing"},
		{"v3, a null software name", 3, []byte{0, 2, '1', 0}, "truncated"},
		{"v3, no body", 3, nil, "truncated"},
		{"v0, bytes after the header", 0, []byte{0, 0, 0, 1}, "trailing"},
	}
	for _, c := range cases {
		r := dialPlain(t, env.boot)
		r.writeRaw(apiVersionsFrame(c.v, 1, c.body))
		r.closedWithoutAnswer(3 * time.Second)
		env.waitLog(3*time.Second, "kafka connection refused", "malformed request before authentication", "api_key=18", c.err)
	}

	// Well-formed, with a tagged field: answered, and the connection stays.
	ok := dialPlain(t, env.boot)
	ok.writeRaw(apiVersionsFrame(4, 1, append(sw[:4:4], 1, 9, 2, 'h', 'i')))
	var resp kmsg.ApiVersionsResponse
	resp.Version = 4
	ok.recv(&resp)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("well-formed v4: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
	// KIP-511: a version the gateway does not know is not read, whatever
	// its body: the v0 answer with UNSUPPORTED_VERSION, on the same connection.
	ok.writeRaw(apiVersionsFrame(9, 2, []byte{0xff, 0xff, 0xff}))
	var old kmsg.ApiVersionsResponse
	old.Version = 0
	ok.recv(&old)
	if old.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("unknown version: error %d, want UNSUPPORTED_VERSION", old.ErrorCode)
	}

	// After authentication too, a malformed ApiVersions closes the connection.
	a := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	a.writeRaw(apiVersionsFrame(3, 9, append(sw[:4:4], 0, 0)))
	a.closedWithoutAnswer(3 * time.Second)
	env.waitLog(3*time.Second, "kafka connection closed: malformed or unknown request", "tenant=acme", "api_key=18", "trailing")
}

// trickle writes b to c one byte every `every`, from a goroutine, until
// b is done, a write fails, or the test ends.
func trickle(t *testing.T, c net.Conn, b []byte, every time.Duration) {
	stop := make(chan struct{})
	done := make(chan struct{})
	t.Cleanup(func() { close(stop); <-done })
	go func() {
		defer close(done)
		for i := range b {
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := c.Write(b[i : i+1]); err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(every):
			}
		}
	}()
}

// closedAfter reads c until the gateway closes it, and says when that was
// (counted from start); it fails past within. The close may come as a FIN
// or as a reset: a peer that is still sending (a trickle) has bytes the
// gateway did not read when it closes, or sends one after, and the kernel
// answers either with a reset. Both are the close; only the deadline is
// "still open".
func closedAfter(t *testing.T, c net.Conn, start time.Time, within time.Duration) time.Duration {
	t.Helper()
	_ = c.SetReadDeadline(start.Add(within))
	if _, err := io.Copy(io.Discard, c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("still open after %v (%v)", within, err)
	}
	return time.Since(start)
}

// The probe's second fault: an authenticated connection that trickled a
// partial frame, one byte every 5 s, stayed open past 60 s with
// idle_timeout: 15s: every byte counted as activity. A request not whole
// within idle_timeout now closes the connection, logged with the cause
// (here idle_timeout 3 s and a byte every 400 ms: closed between 3 s and
// one full sweep after, never by the idle check, which each byte resets);
// a request trickled and finished within the bound is answered.
func TestTricklingPartialFrameClosedAtIdleTimeout(t *testing.T) {
	const idle = 3 * time.Second
	env := newTestEnv(t, "    idle_timeout: 3s\n")

	// Finished within the bound: answered, the connection stays.
	ok := dialRaw(t, env.boot, "globex-app", env.keys["globex-app"])
	v0 := apiVersionsFrame(0, 5, nil)
	trickle(t, ok.c, v0, 60*time.Millisecond) // whole in about 1 s
	var resp kmsg.ApiVersionsResponse
	resp.Version = 0
	ok.recv(&resp)
	if resp.ErrorCode != 0 {
		t.Fatalf("trickled ApiVersions: error %d", resp.ErrorCode)
	}
	// Closed by the client now: left idle it would be closed by the idle
	// check about when the trickler below is, and the two causes share the
	// idle_timeout counter this test reads.
	ok.c.Close()

	// Never finished: a frame of 100 bytes, a byte every 400 ms.
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	partial := append([]byte{0, 0, 0, 100}, bytes.Repeat([]byte{0}, 100)...)
	start := time.Now()
	trickle(t, r.c, partial, 400*time.Millisecond)
	d := closedAfter(t, r.c, start, idle+4*time.Second)
	if d < idle-100*time.Millisecond {
		t.Fatalf("closed after %v, before idle_timeout (%v)", d, idle)
	}
	env.waitLog(3*time.Second, "kafka connection closed: a request not completed within idle_timeout", "tenant=acme", "idle_timeout=3s")
	if n := env.e.env.Signals.ClosedBy(signals.ClosePartialFrame); n != 1 {
		t.Fatalf("idle_timeout closes counted: %d", n)
	}
}

// Before authentication a trickled frame is bounded by auth_timeout,
// which is absolute: the bytes that keep coming do not extend it.
func TestTricklingBeforeAuthClosedAtAuthTimeout(t *testing.T) {
	env := newTestEnv(t, "    auth_timeout: 1s\n    idle_timeout: 1h\n")
	start := time.Now() // before the dial: the gateway's clock starts at its accept
	r := dialPlain(t, env.boot)
	trickle(t, r.c, append([]byte{0, 0, 0, 100}, make([]byte, 100)...), 100*time.Millisecond)
	if d := closedAfter(t, r.c, start, 4*time.Second); d < 900*time.Millisecond {
		t.Fatalf("closed after %v, before auth_timeout", d)
	}
}

// The same over TLS, below the frames: a client authenticated by its
// certificate trickles the bytes of one TLS record, which decrypts to
// nothing until it is whole.
func TestTricklingPartialTLSRecordClosedAtIdleTimeout(t *testing.T) {
	const idle = 3 * time.Second
	te := newTLSEnv(t, "    idle_timeout: 3s\n")
	raw, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", te.port), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	capture := &capturingConn{Conn: raw}
	cert := te.client["billing"]
	c := tls.Client(capture, &tls.Config{ServerName: "bootstrap.shop." + sniDomain, RootCAs: te.ca.pool(), Certificates: []tls.Certificate{cert}})
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	// The record of a 4 KiB request, kept rather than sent.
	capture.on = true
	big := apiVersionsFrame(0, 1, bytes.Repeat([]byte{0}, 4<<10))
	if _, err := c.Write(big); err != nil {
		t.Fatal(err)
	}
	capture.on = false
	start := time.Now()
	trickle(t, raw, capture.buf[:len(capture.buf)-1], 400*time.Millisecond)
	d := closedAfter(t, raw, start, idle+4*time.Second)
	if d < idle-100*time.Millisecond {
		t.Fatalf("closed after %v, before idle_timeout (%v)", d, idle)
	}
	te.waitLog(3*time.Second, "kafka connection closed: a request not completed within idle_timeout", "tenant=acme")
}

// capturingConn keeps what is written while on, instead of sending it.
type capturingConn struct {
	net.Conn
	on  bool
	buf []byte
}

func (c *capturingConn) Write(p []byte) (int, error) {
	if c.on {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// Brokers that misbehave. The gateway reads every broker answer before it
// writes anything of it to the client: an answer it cannot match with the
// request at the head of the client's queue, or larger than
// max_response_bytes, or that does not decode, closes that client's
// connection (and its broker connection), unanswered, with a log line
// saying why; the other clients, of another tenant here, are served on.

// metadataOrders asks r for the metadata of its topic "orders".
func metadataOrders(r *rawConn) {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
	r.send(req)
}

// servedOrders checks that r is answered the metadata of "orders".
func servedOrders(t *testing.T, r *rawConn) {
	t.Helper()
	metadataOrders(r)
	var resp kmsg.MetadataResponse
	resp.Version = 12
	r.recv(&resp)
	if len(resp.Topics) != 1 || resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != "orders" ||
		resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) == 0 {
		t.Fatalf("metadata of orders: %+v", resp.Topics)
	}
}

// brokerMisbehaves runs one case: a globex connection is served, acme's
// Metadata requests (inFlight of them, sent at once) meet the broker's
// misbehaviour and the connection is closed unanswered with a log line
// holding why, the globex connection is served again, nothing panicked.
func brokerMisbehaves(t *testing.T, env *testEnv, inFlight int, why ...string) {
	t.Helper()
	other := dialRaw(t, env.boot, "globex-app", env.keys["globex-app"])
	servedOrders(t, other)
	victim := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	for i := 0; i < inFlight; i++ {
		metadataOrders(victim)
	}
	victim.closedWithoutAnswer(5 * time.Second)
	env.waitLog(5*time.Second, append([]string{"kafka connection closed"}, why...)...)
	servedOrders(t, other)
	if n := env.e.env.Signals.Panics(); n != 0 {
		t.Fatalf("%d panics", n)
	}
}

// kfakeOf returns the env's embedded cluster; the kfake control hooks
// need it (skipped against a real broker).
func kfakeOf(t *testing.T, env *testEnv) *kfake.Cluster {
	t.Helper()
	u := env.e.env.Upstream("events")
	if u == nil || u.Embedded() == nil {
		t.Skip("needs the embedded kfake upstream")
	}
	return u.Embedded()
}

func skipOnRealKafka(t *testing.T) {
	if _, real := realKafka(); real {
		t.Skip("drives kfake's control hooks")
	}
}

// acmeMetadata: a Metadata request of tenant acme (its topics are
// acme.<name> at the broker), never one of globex's.
func acmeMetadata(req kmsg.Request) bool {
	for _, tp := range req.(*kmsg.MetadataRequest).Topics {
		if tp.Topic != nil && strings.HasPrefix(*tp.Topic, "acme.") {
			return true
		}
	}
	return false
}

// everyVersionAnswer is a test broker's ApiVersions answer (version v):
// every key kmsg knows, up to its highest version.
func everyVersionAnswer(v int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = v
	for k := int16(0); k <= codec.MaxKey; k++ {
		if r := kmsg.RequestForKey(k); r != nil {
			kv := kmsg.NewApiVersionsResponseApiKey()
			kv.ApiKey, kv.MaxVersion = k, r.MaxVersion()
			resp.ApiKeys = append(resp.ApiKeys, kv)
		}
	}
	return resp
}

// metadataAnswer is a plausible Metadata answer to req: one broker (node
// 0 at host:port), each topic asked with partitions 0..n-1 led by it.
func metadataAnswer(req *kmsg.MetadataRequest, host string, port int32, n int) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = 0, host, port
	resp.Brokers = []kmsg.MetadataResponseBroker{b}
	resp.ClusterID = kmsg.StringPtr("fake-cluster")
	for _, rt := range req.Topics {
		tp := kmsg.NewMetadataResponseTopic()
		tp.Topic = rt.Topic
		for i := 0; i < n; i++ {
			p := kmsg.NewMetadataResponseTopicPartition()
			p.Partition, p.Leader, p.Replicas, p.ISR = int32(i), 0, []int32{0}, []int32{0}
			tp.Partitions = append(tp.Partitions, p)
		}
		resp.Topics = append(resp.Topics, tp)
	}
	return resp
}

// An answer larger than max_response_bytes (a Metadata of 130 KB, the
// bound at 64 KiB) is refused on its size, before it is read.
func TestBrokerAnswerOversized(t *testing.T) {
	skipOnRealKafka(t)
	env := newTestEnv(t, "    max_response_bytes: 64KiB\n")
	kfakeOf(t, env).ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if !acmeMetadata(req) {
			return nil, nil, false
		}
		return metadataAnswer(req.(*kmsg.MetadataRequest), "127.0.0.1", 9, 5000), nil, true
	})
	brokerMisbehaves(t, env, 1, "broker answer larger than max_response_bytes", "max_response_bytes=65536")
}

// truncated is a broker answer cut in the middle of its body.
type truncated struct{ kmsg.Response }

func (r truncated) AppendTo(dst []byte) []byte {
	full := r.Response.AppendTo(dst)
	return full[:len(dst)+(len(full)-len(dst))/2]
}

// An answer the gateway decodes (Metadata: names mapped back, brokers
// renamed) whose body is cut short.
func TestBrokerAnswerMalformed(t *testing.T) {
	skipOnRealKafka(t)
	env := newTestEnv(t, "")
	kfakeOf(t, env).ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if !acmeMetadata(req) {
			return nil, nil, false
		}
		return truncated{metadataAnswer(req.(*kmsg.MetadataRequest), "127.0.0.1", 9, 2)}, nil, true
	})
	brokerMisbehaves(t, env, 1, "malformed broker answer", "api=3")
}

// fakeBroker is a broker that speaks just enough for the gateway's start
// (ApiVersions, Metadata) and serves Metadata, except to the connections
// of tenant acme (client ids "acme.…" at the broker), where misbehave
// takes over: kfake answers each connection in order with the request's
// correlation id, so what these cases need is written by hand.
type fakeBroker struct {
	t *testing.T
	*brokerListener
	misbehave func(c net.Conn, h codec.RequestHeader, req *kmsg.MetadataRequest)
}

func newFakeBroker(t *testing.T, misbehave func(f *fakeBroker, c net.Conn, h codec.RequestHeader, req *kmsg.MetadataRequest)) *fakeBroker {
	f := &fakeBroker{t: t, brokerListener: newBrokerListener(t)}
	f.misbehave = func(c net.Conn, h codec.RequestHeader, req *kmsg.MetadataRequest) { misbehave(f, c, h, req) }
	f.start(f.serve)
	return f
}

// read reads one request; ok false when the connection ends.
func (f *fakeBroker) read(c net.Conn) (codec.RequestHeader, []byte, bool) {
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return codec.RequestHeader{}, nil, false
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 1<<20 {
		f.t.Errorf("fake broker: a request of %d bytes", n)
		return codec.RequestHeader{}, nil, false
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(c, frame); err != nil {
		return codec.RequestHeader{}, nil, false
	}
	h, err := codec.ParseRequestHeader(frame)
	if err != nil {
		f.t.Errorf("fake broker: %v", err)
		return h, nil, false
	}
	return h, frame[h.BodyOffset:], true
}

// answer writes resp with correlation id corr.
func (f *fakeBroker) answer(c net.Conn, corr int32, resp kmsg.Response) {
	b := []byte{0, 0, 0, 0}
	b = codec.AppendResponseHeader(b, resp.Key(), resp.GetVersion(), corr)
	b = resp.AppendTo(b)
	codec.PutSize(b, len(b)-4)
	_, _ = c.Write(b)
}

// metadata decodes a Metadata request body.
func (f *fakeBroker) metadata(h codec.RequestHeader, body []byte) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = h.Version
	if err := req.ReadFrom(body); err != nil {
		f.t.Errorf("fake broker: Metadata v%d: %v", h.Version, err)
		return nil
	}
	return req
}

func (f *fakeBroker) serve(c net.Conn) {
	defer c.Close()
	for {
		h, body, ok := f.read(c)
		if !ok {
			return
		}
		switch h.Key {
		case int16(kmsg.ApiVersions):
			f.answer(c, h.Correlation, everyVersionAnswer(h.Version))
		case int16(kmsg.Metadata):
			req := f.metadata(h, body)
			if req == nil {
				return
			}
			if strings.HasPrefix(string(h.ClientID), "acme.") {
				f.misbehave(c, h, req)
				continue
			}
			f.answer(c, h.Correlation, metadataAnswer(req, f.host, f.port, 1))
		default:
			f.t.Errorf("fake broker: unexpected %s", kmsg.NameForKey(h.Key))
			return
		}
	}
}

// An answer whose correlation id the gateway never gave.
func TestBrokerAnswerUnknownCorrelationID(t *testing.T) {
	f := newFakeBroker(t, func(f *fakeBroker, c net.Conn, h codec.RequestHeader, req *kmsg.MetadataRequest) {
		f.answer(c, h.Correlation+1000, metadataAnswer(req, f.host, f.port, 1))
	})
	env := newTestEnvWith(t, envConfig{upstream: f.upstream()})
	brokerMisbehaves(t, env, 1, "broker answer out of order", "unknown correlation id")
}

// Two requests in flight, answered second first.
func TestBrokerAnswersOutOfOrder(t *testing.T) {
	f := newFakeBroker(t, func(f *fakeBroker, c net.Conn, h codec.RequestHeader, req *kmsg.MetadataRequest) {
		h2, body2, ok := f.read(c)
		if !ok || h2.Key != int16(kmsg.Metadata) {
			return
		}
		req2 := f.metadata(h2, body2)
		if req2 == nil {
			return
		}
		f.answer(c, h2.Correlation, metadataAnswer(req2, f.host, f.port, 1))
		f.answer(c, h.Correlation, metadataAnswer(req, f.host, f.port, 1))
	})
	env := newTestEnvWith(t, envConfig{upstream: f.upstream()})
	brokerMisbehaves(t, env, 2, "broker answer out of order", "the answer to a later request")
}

// A connection the gateway makes wait (held for its in-flight budget: it
// reads none of its answers) while the client goes on sending whole
// requests is not "a request not completed": its frames are whole, the
// wait is the gateway's. It is closed by the write timeout, as before,
// and not at idle_timeout.
func TestHeldConnectionNotClosedAsPartialFrame(t *testing.T) {
	const write = 5 * time.Second
	env := newTestEnv(t, "    idle_timeout: 2s\n    max_in_flight_bytes: 1MiB\n    max_response_bytes: 2MiB\n", WithWriteTimeout(write))
	fillOrders(t, env, 40)
	addr := leaderOf0(t, env)
	start := time.Now()
	r := stall(t, env, addr, 100) // far more than the kernel's buffers hold
	// Whole requests, one every 300 ms, behind the held one: the
	// connection is never idle.
	go func() {
		for i := int32(0); ; i++ {
			_ = r.c.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := r.c.Write(apiVersionsFrame(0, 1000+i, nil)); err != nil {
				return
			}
			time.Sleep(300 * time.Millisecond)
		}
	}()
	// Reading would drain the answers: the close is watched in the log.
	line := env.waitLog(write+5*time.Second, "kafka connection closed")
	d := time.Since(start)
	if !strings.Contains(line, "does not read its answers") || d < write-200*time.Millisecond {
		t.Fatalf("closed after %v (write timeout %v): %s", d, write, line)
	}
}
