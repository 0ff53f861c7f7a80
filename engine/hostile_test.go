package engine

// Hostile bytes: clients and brokers that do not follow the protocol.
// Each test says what the peer does, and checks that the gateway closes
// that connection alone, says why, and goes on serving the others.

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
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
// (counted from start); it fails past within.
func closedAfter(t *testing.T, c net.Conn, start time.Time, within time.Duration) time.Duration {
	t.Helper()
	_ = c.SetReadDeadline(start.Add(within))
	if _, err := io.Copy(io.Discard, c); err != nil {
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
	if n := env.e.m.closedBy["idle_timeout"].Get(); n != 1 {
		t.Fatalf("idle_timeout closes counted: %d", n)
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
