package looptls

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/cryptobyte"
)

// The ClientHellos of real crypto/tls clients: one server name each
// (what the client is configured with) under several client
// configurations. sent is the name the client puts in its hello ("" for
// none: crypto/tls sends no IP address and strips a trailing dot).
var helloNames = []struct{ name, sent string }{
	{"bootstrap.shop.kafka.example.com", "bootstrap.shop.kafka.example.com"},
	{"broker-2.shop.kafka.example.com", "broker-2.shop.kafka.example.com"},
	{"Broker-17.SHOP.Kafka.Example.Com", "Broker-17.SHOP.Kafka.Example.Com"},
	{"localhost", "localhost"},
	{"a.b", "a.b"},
	{"under_score.example.com", "under_score.example.com"},
	{"xn--bcher-kva.example", "xn--bcher-kva.example"},
	{longHost, longHost},
	{"trailing.dot.example.com.", "trailing.dot.example.com"},
	{"127.0.0.1", ""},
	{"::1", ""},
	{"", ""},
	// Not host names: crypto/tls sends them as given, the gateway routes
	// none of them (ErrNoSNI).
	{"ünicode.example", "ünicode.example"},
	{strings.Repeat("x", 64) + ".example", strings.Repeat("x", 64) + ".example"},
	{"space in.example", "space in.example"},
}

// longHost is a host name of 253 bytes, the most DNS allows.
var longHost = strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61)

var helloConfigs = []struct {
	name string
	cfg  func(*tls.Config)
}{
	{"default", func(*tls.Config) {}},
	{"tls12", func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 }},
	{"tls13", func(c *tls.Config) { c.MinVersion = tls.VersionTLS13 }},
	{"alpn+tickets", func(c *tls.Config) {
		c.NextProtos = []string{"kafka", "h2"}
		c.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	}},
	{"mlkem", func(c *tls.Config) { c.CurvePreferences = []tls.CurveID{tls.X25519MLKEM768, tls.X25519} }},
}

// capturedHello is one ClientHello a crypto/tls client wrote.
type capturedHello struct {
	label string
	sent  string // the server name in it, "" for none
	b     []byte // its records, as written
}

var (
	capturedOnce   sync.Once
	capturedHellos []capturedHello
)

// captureHellos captures (once) the ClientHello of a tls.Client for
// every name and configuration above, read off a net.Pipe.
func captureHellos(t testing.TB) []capturedHello {
	capturedOnce.Do(func() {
		for _, n := range helloNames {
			for _, c := range helloConfigs {
				cfg := &tls.Config{ServerName: n.name, InsecureSkipVerify: n.name == ""}
				c.cfg(cfg)
				b, err := captureHello(cfg)
				if err != nil {
					t.Fatalf("capture %q %s: %v", n.name, c.name, err)
				}
				capturedHellos = append(capturedHellos, capturedHello{label: c.name + "/" + n.name, sent: n.sent, b: b})
			}
		}
	})
	if len(capturedHellos) == 0 {
		t.Fatal("no ClientHello captured")
	}
	return capturedHellos
}

// captureHello runs a tls.Client over a net.Pipe and returns the records
// holding its ClientHello.
func captureHello(cfg *tls.Config) ([]byte, error) {
	c1, c2 := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tls.Client(c1, cfg).Handshake()
	}()
	defer func() { c2.Close(); c1.Close(); <-done }()
	_ = c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	var out, msg []byte
	for {
		var hdr [recordHeaderLen]byte
		if _, err := io.ReadFull(c2, hdr[:]); err != nil {
			return nil, err
		}
		frag := make([]byte, binary.BigEndian.Uint16(hdr[3:]))
		if _, err := io.ReadFull(c2, frag); err != nil {
			return nil, err
		}
		out = append(append(out, hdr[:]...), frag...)
		msg = append(msg, frag...)
		if len(msg) >= 4 && len(msg) >= 4+(int(msg[1])<<16|int(msg[2])<<8|int(msg[3])) {
			return out, nil
		}
	}
}

// helloMessage returns the handshake message carried by the records of b.
func helloMessage(t testing.TB, b []byte) []byte {
	var msg []byte
	for len(b) >= recordHeaderLen {
		l := int(binary.BigEndian.Uint16(b[3:]))
		msg = append(msg, b[recordHeaderLen:recordHeaderLen+l]...)
		b = b[recordHeaderLen+l:]
	}
	if len(b) != 0 {
		t.Fatal("not whole records")
	}
	return msg
}

// records cuts a handshake message into handshake records of the given
// fragment sizes, the last one taking the rest.
func records(msg []byte, sizes ...int) []byte {
	var out []byte
	for len(msg) > 0 {
		n := len(msg)
		if len(sizes) > 0 {
			n = min(sizes[0], n)
			sizes = sizes[1:]
		}
		out = append(out, recordTypeHandshake, 3, 1, byte(n>>8), byte(n))
		out = append(out, msg[:n]...)
		msg = msg[n:]
	}
	return out
}

// refragmented are the ways the tests cut a captured hello again: the
// message's 4-byte header split across records, and halves.
func refragmented(t testing.TB, b []byte) [][]byte {
	msg := helloMessage(t, b)
	return [][]byte{
		records(msg, 1),
		records(msg, 2, 1, 1),
		records(msg, 3),
		records(msg, 4),
		records(msg, 5, 7),
		records(msg, len(msg)/2),
	}
}

// hostRE is the invariant's idea of a host name, written apart from the
// parser's: labels of 1-63 letters, digits, '-' or '_', no trailing dot.
var hostRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,63}(\.[A-Za-z0-9_-]{1,63})*$`)

func isHostForTest(s string) bool { return len(s) <= 253 && hostRE.MatchString(s) }

// helloConn is a net.Conn that reads b and swallows writes: a crypto/tls
// server reads a ClientHello from it without a peer.
type helloConn struct{ r *bytes.Reader }

func (c helloConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c helloConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c helloConn) Close() error                     { return nil }
func (c helloConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c helloConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c helloConn) SetDeadline(time.Time) error      { return nil }
func (c helloConn) SetReadDeadline(time.Time) error  { return nil }
func (c helloConn) SetWriteDeadline(time.Time) error { return nil }

var errStopHello = errors.New("seen")

// cryptoTLSServerName is what a crypto/tls server reads from b: the server
// name of its ClientHello, and whether it parsed one at all.
func cryptoTLSServerName(b []byte) (string, bool) {
	var name string
	parsed := false
	cfg := &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		name, parsed = h.ServerName, true
		return nil, errStopHello
	}}
	_ = tls.Server(helloConn{bytes.NewReader(b)}, cfg).Handshake()
	return name, parsed
}

// L1: on the hellos of real crypto/tls clients, cut in records as the
// client wrote them or cut again, ParseSNI reads the name the client sent
// and crypto/tls's server reads (ErrNoSNI when the client sent none, or
// one that is not a host name).
func TestParseSNIAgreesWithCryptoTLS(t *testing.T) {
	for _, h := range captureHellos(t) {
		for i, b := range append([][]byte{h.b}, refragmented(t, h.b)...) {
			got, err := ParseSNI(b)
			tlsName, parsed := cryptoTLSServerName(b)
			if !parsed {
				t.Fatalf("%s (cut %d): crypto/tls did not parse the hello", h.label, i)
			}
			if tlsName != h.sent {
				t.Fatalf("%s (cut %d): crypto/tls read %q, the client sent %q", h.label, i, tlsName, h.sent)
			}
			want, wantErr := h.sent, error(nil)
			if !isHostForTest(h.sent) {
				want, wantErr = "", ErrNoSNI
			}
			if got != want || err != wantErr {
				t.Fatalf("%s (cut %d): ParseSNI = %q, %v; want %q, %v", h.label, i, got, err, want, wantErr)
			}
		}
	}
}

// "Need more bytes" stays what the caller waits on: every strict prefix
// of a hello is ErrHelloIncomplete, and bytes after a whole hello (the
// client's next records) do not change its name.
func TestParseSNIIncompleteUntilWhole(t *testing.T) {
	h := captureHellos(t)[0]
	for i, b := range append([][]byte{h.b}, refragmented(t, h.b)...) {
		for n := 0; n < len(b); n++ {
			if _, err := ParseSNI(b[:n]); err != ErrHelloIncomplete {
				t.Fatalf("cut %d, %d of %d bytes: %v, want ErrHelloIncomplete", i, n, len(b), err)
			}
		}
		more := append(append([]byte(nil), b...), 0x14, 3, 3, 0, 1, 1, 0x17, 3, 3, 0xff, 0xff)
		if got, err := ParseSNI(more); err != nil || got != h.sent {
			t.Fatalf("cut %d with bytes after it: %q, %v", i, got, err)
		}
	}
}

// helloBody builds a ClientHello message (header included) whose
// extensions exts writes; exts nil: no extension block at all.
func helloBody(exts func(*cryptobyte.Builder)) []byte {
	var b cryptobyte.Builder
	b.AddUint8(typeClientHello)
	b.AddUint24LengthPrefixed(func(b *cryptobyte.Builder) {
		b.AddUint16(0x0303)
		b.AddBytes(make([]byte, 32))
		b.AddUint8LengthPrefixed(func(*cryptobyte.Builder) {})
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddUint16(0x1301) })
		b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) { b.AddUint8(0) })
		if exts != nil {
			b.AddUint16LengthPrefixed(exts)
		}
	})
	return b.BytesOrPanic()
}

// sniExt writes a server_name extension listing names of the given types.
func sniExt(entries ...any) func(*cryptobyte.Builder) {
	return func(b *cryptobyte.Builder) {
		b.AddUint16(extServerName)
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
			b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
				for i := 0; i < len(entries); i += 2 {
					b.AddUint8(uint8(entries[i].(int)))
					b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(entries[i+1].(string))) })
				}
			})
		})
	}
}

func both(fs ...func(*cryptobyte.Builder)) func(*cryptobyte.Builder) {
	return func(b *cryptobyte.Builder) {
		for _, f := range fs {
			f(b)
		}
	}
}

func otherExt(b *cryptobyte.Builder) {
	b.AddUint16(16) // ALPN
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte{0, 6, 5, 'k', 'a', 'f', 'k', 'a'}) })
}

// The three answers the caller tells apart, on hellos built by hand.
func TestParseSNICases(t *testing.T) {
	apiVersions := []byte{0, 0, 0, 0x11, 0, 18, 0, 3, 0, 0, 0, 1, 0, 3, 'c', 'l', 'i', 0, 0, 0, 0}
	good := helloBody(both(otherExt, sniExt(0, "bootstrap.shop.kafka.example.com")))
	// The message's length claims one byte more, and that byte comes in a
	// second record: a hello with a byte after its extensions.
	long := append([]byte(nil), good...)
	long[3]++
	trailing := append(records(long), records([]byte{0})...)
	for _, c := range []struct {
		name string
		b    []byte
		want string
		err  error
	}{
		{"sni among other extensions", records(good), "bootstrap.shop.kafka.example.com", nil},
		{"a name of another type first", records(helloBody(sniExt(7, "x", 0, "a.example"))), "a.example", nil},
		{"a Kafka frame", apiVersions, "", ErrNotTLS},
		{"an HTTP request", []byte("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), "", ErrNotTLS},
		{"four bytes of anything", []byte("GET "), "", ErrHelloIncomplete},
		{"an alert record", []byte{0x15, 3, 3, 0, 2, 2, 40}, "", ErrNotTLS},
		{"an empty record", []byte{0x16, 3, 1, 0, 0}, "", ErrNotTLS},
		{"a record over 18 KiB", []byte{0x16, 3, 1, 0x48, 0x01}, "", ErrNotTLS},
		{"a ServerHello", records(append([]byte{2}, good[1:]...)), "", ErrNotTLS},
		{"a hello over 64 KiB", []byte{0x16, 3, 1, 0, 4, 1, 1, 0, 1}, "", ErrNotTLS},
		{"no extensions", records(helloBody(nil)), "", ErrNoSNI},
		{"no server_name", records(helloBody(otherExt)), "", ErrNoSNI},
		{"only names of another type", records(helloBody(sniExt(1, "x"))), "", ErrNoSNI},
		{"a name that is no host name", records(helloBody(sniExt(0, "a b"))), "", ErrNoSNI},
		{"a trailing dot", records(helloBody(sniExt(0, "a.example."))), "", ErrNoSNI},
		{"two host names", records(helloBody(sniExt(0, "a.example", 0, "b.example"))), "", ErrNotTLS},
		{"two server_name extensions", records(helloBody(both(sniExt(0, "a.example"), sniExt(0, "b.example")))), "", ErrNotTLS},
		{"an empty name", records(helloBody(sniExt(0, ""))), "", ErrNotTLS},
		{"an empty name list", records(helloBody(sniExt())), "", ErrNotTLS},
		{"bytes after the extensions", trailing, "", ErrNotTLS},
		{"bytes after the hello, in its record", records(append(good[:len(good):len(good)], 0)), "bootstrap.shop.kafka.example.com", nil},
		{"a hello in 17 records", records(good, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), "", ErrNotTLS},
		{"a hello in 16 records", records(good, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), "bootstrap.shop.kafka.example.com", nil},
	} {
		got, err := ParseSNI(c.b)
		if got != c.want || err != c.err {
			t.Errorf("%s: %q, %v; want %q, %v", c.name, got, err, c.want, c.err)
		}
	}
}

// fragments joins the fragments of the whole records at the start of b: a
// name cut by a record boundary is a substring of these, not of b.
func fragments(b []byte) []byte {
	var out []byte
	for len(b) >= recordHeaderLen {
		l := int(binary.BigEndian.Uint16(b[3:]))
		if len(b) < recordHeaderLen+l {
			break
		}
		out = append(out, b[recordHeaderLen:recordHeaderLen+l]...)
		b = b[recordHeaderLen+l:]
	}
	return out
}

// FuzzParseSNI: the first bytes of an unauthenticated TLS client.
// Invariants: ParseSNI never panics and answers one of its three errors
// or a name; a name is a substring of the input (of its records'
// fragments joined, when the hello spans records) and a host name; bytes
// after a hello do not change its name; when crypto/tls's server parses
// the same bytes, it reads that name (or, when ParseSNI says ErrNoSNI,
// no host name). Seeds: real crypto/tls hellos, as written and cut again.
func FuzzParseSNI(f *testing.F) {
	for _, h := range captureHellos(f) {
		f.Add(h.b)
		for _, b := range refragmented(f, h.b) {
			f.Add(b)
		}
	}
	good := helloBody(both(otherExt, sniExt(0, "bootstrap.shop.kafka.example.com")))
	f.Add(records(good))
	f.Add(records(helloBody(sniExt(0, "a.example", 0, "b.example"))))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		name, err := ParseSNI(b)
		switch err {
		case nil:
		case ErrHelloIncomplete, ErrNotTLS, ErrNoSNI:
			if name != "" {
				t.Fatalf("a name %q with %v", name, err)
			}
		default:
			t.Fatalf("unknown error %v", err)
		}
		if err == nil {
			if !bytes.Contains(fragments(b), []byte(name)) {
				t.Fatalf("name %q is not in the input", name)
			}
			if !isHostForTest(name) {
				t.Fatalf("name %q is not a host name", name)
			}
			more := append(append([]byte(nil), b...), 0x16, 3, 3, 0, 1, 0xff)
			if again, err := ParseSNI(more); again != name || err != nil {
				t.Fatalf("bytes after the hello: %q, %v; was %q", again, err, name)
			}
		}
		if err == nil || err == ErrNoSNI {
			if tlsName, parsed := cryptoTLSServerName(b); parsed {
				if err == nil && tlsName != name {
					t.Fatalf("ParseSNI read %q, crypto/tls %q", name, tlsName)
				}
				if err == ErrNoSNI && isHostForTest(tlsName) {
					t.Fatalf("ParseSNI read no name, crypto/tls %q", tlsName)
				}
			}
		}
	})
}
