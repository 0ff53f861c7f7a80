package looptls

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
)

// memStream is a socket as the loop sees it: what the peer sent, buffered;
// what is written goes to the peer. The test is the loop (one goroutine),
// except AsyncWrite, which a worker calls.
type memStream struct {
	mu   sync.Mutex
	in   []byte
	peer net.Conn // the test's end of the wire to the peer
}

func (m *memStream) Buffered() int { m.mu.Lock(); defer m.mu.Unlock(); return len(m.in) }
func (m *memStream) Peek(n int) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n > len(m.in) {
		return nil, io.ErrShortBuffer
	}
	return m.in[:n], nil
}
func (m *memStream) Discard(n int) { m.mu.Lock(); m.in = m.in[n:]; m.mu.Unlock() }
func (m *memStream) Write(b []byte) error {
	_, err := m.peer.Write(b)
	return err
}
func (m *memStream) AsyncWrite(b []byte) error {
	go func() { _, _ = m.peer.Write(b) }()
	return nil
}

// readPeer copies what the peer sends into the stream's buffer (the
// loop's reads) and, before OnLoop, feeds the handshake's worker.
func (m *memStream) add(b []byte) { m.mu.Lock(); m.in = append(m.in, b...); m.mu.Unlock() }

func pair(t *testing.T) (srvCfg, cliCfg *tls.Config) {
	ca := testkit.NewCA(t, "looptls")
	c, k := ca.Issue(t, testkit.Leaf{CommonName: "x", Names: []string{"x.test"}})
	srvCfg = &tls.Config{Certificates: []tls.Certificate{testkit.KeyPair(t, c, k)}, MinVersion: tls.VersionTLS12}
	cliCfg = &tls.Config{ServerName: "x.test", RootCAs: ca.Pool()}
	return
}

// A server handshake on a worker (IO fed by the loop, writes through
// AsyncWrite), then the record layer on the loop: would-block is not an
// end, the plaintext is read as a buffer, a vectored write arrives whole.
func TestWorkerHandshakeThenLoopRecords(t *testing.T) {
	srvCfg, cliCfg := pair(t)
	wire, peerEnd := net.Pipe()
	defer wire.Close()
	defer peerEnd.Close()
	srv, cli := handshakeThenLoop(t, wire, peerEnd, srvCfg, cliCfg)

	r := NewRecord(srv)
	recordsReadAsBuffer(t, r, cli)
	// A vectored write, one record, read whole by the peer.
	vectoredWriteWhole(t, r, cli)
	// The peer's close_notify ends the record layer with io.EOF.
	closeNotifyEnds(t, r, cli)
}

// handshakeThenLoop: the server end's handshake on an IO the loop feeds
// (through wire) and the client's on peerEnd, both within 30 seconds; then
// the IO is switched to the loop. It returns both ends.
func handshakeThenLoop(t *testing.T, wire, peerEnd net.Conn, srvCfg, cliCfg *tls.Config) (srv, cli *tls.Conn) {
	st := &memStream{peer: wire}
	a := NewIO(st, nil, nil, false)
	srv = tls.Server(a, srvCfg)
	cli = tls.Client(peerEnd, cliCfg)

	// The loop's reads of the wire: fed to the worker until OnLoop, then
	// buffered in the stream.
	var loopMode bool
	var mu sync.Mutex
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := wire.Read(buf)
			if err != nil {
				return
			}
			mu.Lock()
			if loopMode {
				st.add(buf[:n])
			} else {
				a.Feed(buf[:n])
			}
			mu.Unlock()
		}
	}()
	hs := make(chan error, 2)
	go func() { hs <- srv.Handshake() }()
	go func() { hs <- cli.Handshake() }()
	for i := 0; i < 2; i++ {
		select {
		case err := <-hs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("handshake did not end")
		}
	}
	mu.Lock()
	loopMode = true
	a.OnLoop()
	mu.Unlock()
	return srv, cli
}

// recordsReadAsBuffer: Pump with nothing buffered is not an end; several
// records written by the peer are read as one plaintext buffer, peeked
// and discarded whole.
func recordsReadAsBuffer(t *testing.T, r *Record, cli *tls.Conn) {
	if err := r.Pump(); err != nil || r.Buffered() != 0 {
		t.Fatalf("Pump with nothing buffered: %v, %d bytes", err, r.Buffered())
	}
	msg := bytes.Repeat([]byte("kafka-frame;"), 5000) // 60,000 bytes: several records
	go cli.Write(msg)
	deadline := time.Now().Add(30 * time.Second)
	for r.Buffered() < len(msg) && time.Now().Before(deadline) {
		if err := r.Pump(); err != nil {
			t.Fatalf("Pump: %v (a would-block must not end the connection)", err)
		}
		time.Sleep(time.Millisecond)
	}
	head, err := r.Peek(12)
	if err != nil || string(head) != "kafka-frame;" {
		t.Fatalf("Peek: %q, %v", head, err)
	}
	all, _ := r.Peek(-1)
	if !bytes.Equal(all, msg) {
		t.Fatalf("plaintext of %d bytes, want %d", len(all), len(msg))
	}
	r.Discard(len(msg))
	if r.Buffered() != 0 {
		t.Fatal("Discard left bytes")
	}
}

// vectoredWriteWhole: a Writev of three slices reaches the peer as one
// message.
func vectoredWriteWhole(t *testing.T, r *Record, cli *tls.Conn) {
	done := make(chan []byte, 1)
	go func() {
		b := make([]byte, 12)
		_, err := io.ReadFull(cli, b)
		if err != nil {
			done <- nil
			return
		}
		done <- b
	}()
	if err := r.Writev([][]byte{[]byte("hello"), []byte(", "), []byte("kafka")}); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-done:
		if string(b) != "hello, kafka" {
			t.Fatalf("the peer read %q", b)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the peer read nothing")
	}
}

// closeNotifyEnds: once the peer closes, Pump returns io.EOF within 30
// seconds, and no other error before.
func closeNotifyEnds(t *testing.T, r *Record, cli *tls.Conn) {
	_ = cli.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := r.Pump()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Pump after close_notify: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("close_notify not seen")
		}
		time.Sleep(time.Millisecond)
	}
}

// A worker waiting in Read is woken by Close with net.ErrClosed.
func TestCloseWakesTheWorker(t *testing.T) {
	a := NewIO(&memStream{}, nil, nil, false)
	got := make(chan error, 1)
	go func() { _, err := a.Read(make([]byte, 8)); got <- err }()
	a.Close()
	select {
	case err := <-got:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Read after Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the worker was not woken")
	}
}
