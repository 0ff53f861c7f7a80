package hostile

// A Kafka connection written by hand: the attacks send what no library
// would (frames cut, sizes wrong, answers never read). Its methods return
// errors, never fail the test: they run on many goroutines at once.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ioDeadline bounds one send or receive: far above what an answer takes on
// a loaded machine; it turns a hang into an error.
const ioDeadline = 20 * time.Second

type raw struct {
	c    net.Conn
	corr int32
}

// The attackers come from loopback addresses of their own, 127.0.0.2 and
// up (the whole of 127/8 is loopback on Linux), the canary from 127.0.0.1:
// the per-address bound (max_connections_per_ip, 16) stays the seeds'
// default, and an attacker has the addresses a real one would.
const attackers = 200

var nextAttacker atomic.Uint32

// attacker is the i-th attacker address.
func attacker(i int) string { return fmt.Sprintf("127.0.0.%d", 2+i%attackers) }

// dial opens a connection to addr from the next attacker address.
func dial(addr string) (*raw, error) {
	return dialFrom(attacker(int(nextAttacker.Add(1))), addr)
}

// dialFrom opens a connection to addr from the address host.
func dialFrom(host, addr string) (*raw, error) {
	d := net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(host)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &raw{c: c}, nil
}

// dialAuthed opens a connection to addr and authenticates it with PLAIN.
func dialAuthed(addr, user, pass string) (*raw, error) {
	r, err := dial(addr)
	if err != nil {
		return nil, err
	}
	code, err := r.plain(user, pass)
	if err == nil && code != 0 {
		err = fmt.Errorf("authenticate %s: %v", user, kerr.ErrorForCode(code))
	}
	if err != nil {
		r.c.Close()
		return nil, err
	}
	return r, nil
}

// plain runs SaslHandshake v1 (PLAIN) then SaslAuthenticate v2; it returns
// the authentication's error code.
func (r *raw) plain(user, pass string) (int16, error) {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = "PLAIN"
	hsr := kmsg.NewPtrSASLHandshakeResponse()
	if err := r.roundTrip(hs, hsr); err != nil {
		return 0, fmt.Errorf("handshake: %w", err)
	}
	if hsr.ErrorCode != 0 {
		return hsr.ErrorCode, nil
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version = 2
	au.SASLAuthBytes = []byte("\x00" + user + "\x00" + pass)
	aur := kmsg.NewPtrSASLAuthenticateResponse()
	if err := r.roundTrip(au, aur); err != nil {
		return 0, fmt.Errorf("authenticate: %w", err)
	}
	return aur.ErrorCode, nil
}

// frame is req as a whole frame under correlation id corr.
func frame(req kmsg.Request, corr int32) []byte {
	b := []byte{0, 0, 0, 0}
	b = codec.AppendRequestHeader(b, req.Key(), req.GetVersion(), corr, []byte("hostile"), false, req.IsFlexible())
	b = req.AppendTo(b)
	codec.PutSize(b, len(b)-4)
	return b
}

// send writes req; it returns its correlation id.
func (r *raw) send(req kmsg.Request) (int32, error) {
	r.corr++
	return r.corr, r.write(frame(req, r.corr))
}

func (r *raw) write(b []byte) error {
	_ = r.c.SetWriteDeadline(time.Now().Add(ioDeadline))
	_, err := r.c.Write(b)
	return err
}

// next reads one answer frame: its correlation id and the bytes after it.
func (r *raw) next() (int32, []byte, error) {
	_ = r.c.SetReadDeadline(time.Now().Add(ioDeadline))
	var sz [4]byte
	if _, err := io.ReadFull(r.c, sz[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(sz[:])
	if n < 4 || n > 128<<20 {
		return 0, nil, fmt.Errorf("an answer of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.c, b); err != nil {
		return 0, nil, err
	}
	return int32(binary.BigEndian.Uint32(b)), b[4:], nil
}

// roundTrip sends req and reads its answer into resp.
func (r *raw) roundTrip(req kmsg.Request, resp kmsg.Response) error {
	corr, err := r.send(req)
	if err != nil {
		return err
	}
	got, body, err := r.next()
	if err != nil {
		return err
	}
	if got != corr {
		return fmt.Errorf("answer to %d, want %d", got, corr)
	}
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		_, n := binary.Uvarint(body) // the header's tagged fields: none expected
		if n <= 0 || body[0] != 0 {
			return errors.New("tagged fields in an answer's header")
		}
		body = body[n:]
	}
	return resp.ReadFrom(body)
}

// closedWithin reads until the gateway closes the connection (EOF or a
// reset), discarding what it answers; an error if it is still open after d.
func (r *raw) closedWithin(d time.Duration) error {
	_ = r.c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, r.c)
	if err == nil || errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	return fmt.Errorf("still open after %v: %w", d, err)
}

// reset closes the connection with a reset (linger 0).
func (r *raw) reset() {
	if tc, ok := r.c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	r.c.Close()
}

func (r *raw) Close() error { return r.c.Close() }

// metadata is a Metadata v9 request (flexible) for topics (nil: all).
func metadata(topics ...string) *kmsg.MetadataRequest {
	m := kmsg.NewPtrMetadataRequest()
	m.Version = 9
	if topics == nil {
		m.Topics = nil
		return m
	}
	m.Topics = []kmsg.MetadataRequestTopic{}
	for _, t := range topics {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(t)
		m.Topics = append(m.Topics, mt)
	}
	return m
}
