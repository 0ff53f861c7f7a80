package engine

// Hostile bytes: clients and brokers that do not follow the protocol.
// Each test says what the peer does, and checks that the gateway closes
// that connection alone, says why, and goes on serving the others.

import (
	"io"
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
