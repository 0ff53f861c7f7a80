package engine

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/engine/signals"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// gaugePeak samples flexway_kafka_connections and the acceptor's places
// every millisecond until the test ends; peak returns the highest of both.
func gaugePeak(t *testing.T, e *Engine) func() (gauge, places int) {
	var g, p atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			if v := int64(e.env.Signals.Connections()); v > g.Load() {
				g.Store(v)
			}
			if v := int64(e.acc.open()); v > p.Load() {
				p.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tk.C:
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return func() (int, int) { return int(g.Load()), int(p.Load()) }
}

// sendApiVersions writes an ApiVersions v3 request on a raw socket.
func sendApiVersions(t *testing.T, c net.Conn) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = "accept-test"
	req.ClientSoftwareVersion = "1"
	b := []byte{0, 0, 0, 0}
	b = codec.AppendRequestHeader(b, 18, 3, 7, []byte("c"), false, true)
	b = req.AppendTo(b)
	codec.PutSize(b, len(b)-4)
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(b); err != nil {
		t.Fatalf("send ApiVersions: %v", err)
	}
}

// answered waits up to d for one whole answer frame on c: nil once it
// came, os.ErrDeadlineExceeded if nothing came; any other error (the
// connection closed or reset) is what the bound must never do.
func answered(c net.Conn, d time.Duration) error {
	c.SetReadDeadline(time.Now().Add(d))
	var sz [4]byte
	if _, err := io.ReadFull(c, sz[:]); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.ReadFull(c, make([]byte, binary.BigEndian.Uint32(sz[:])))
	return err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// noRefusal checks that no connection bound refused anything.
func noRefusal(t *testing.T, e *Engine) {
	t.Helper()
	for _, bound := range signals.Bounds() {
		if n := e.env.Signals.RefusedBy(bound); n != 0 {
			t.Fatalf("%d connections refused by %s", n, bound)
		}
	}
}

// L3, issue 13.7: at max_connections the gateway stops accepting and the
// kernel's queue holds the rest; nothing is refused. Four connections
// (two authenticated with PLAIN, two not authenticated) spread over the
// bootstrap and broker ports take the four places; two more connect at
// the TCP level on two other ports, and their ApiVersions stay unanswered,
// neither closed nor reset, while the gauge stays at 4. Each close of one
// of the first four lets exactly one waiting connection in, answered.
func TestMaxConnectionsQueuesAtBound(t *testing.T) {
	const bound = 4
	// auth_timeout far past the test: the two connections that never
	// authenticate must hold their places, not be closed at the default 10 s.
	env := newTestEnvPorts(t, fmt.Sprintf("    max_connections: %d\n    auth_timeout: 2m\n", bound), 4)
	peak := gaugePeak(t, env.e)
	port := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", env.base+i) }

	authed := []*rawConn{dialRaw(t, port(0), "acme-app", env.keys["acme-app"]), dialRaw(t, port(1), "globex-app", env.keys["globex-app"])}
	anon := []net.Conn{}
	for _, p := range []int{2, 3} {
		c := dialPlain(t, port(p)).c
		sendApiVersions(t, c)
		if err := answered(c, 5*time.Second); err != nil {
			t.Fatalf("connection %d of %d not served: %v", len(authed)+len(anon)+1, bound, err)
		}
		anon = append(anon, c)
	}
	for _, r := range authed {
		sendApiVersions(t, r.c)
		if err := answered(r.c, 5*time.Second); err != nil {
			t.Fatalf("an authenticated connection under the bound: %v", err)
		}
	}
	if g := env.e.env.Signals.Connections(); g != bound {
		t.Fatalf("flexway_kafka_connections = %d with %d connections open", g, bound)
	}

	// Past the bound: the TCP connect succeeds (the kernel's queue), the
	// request waits. Two other ports: one bound for every listener port.
	waiting := []net.Conn{dialWaiting(t, port(0)), dialWaiting(t, port(3))}
	for i, c := range waiting {
		if err := answered(c, time.Second); !isTimeout(err) {
			t.Fatalf("waiting connection %d at the bound: %v, want no answer and no close", i, err)
		}
	}
	var metricsText bytes.Buffer
	env.e.Metrics().WritePrometheus(&metricsText)
	if n := testkit.SumSeries(metricsText.String(), "flexway_kafka_connections{"); n != float64(bound) {
		t.Fatalf("/metrics at the bound:\n%s", metricsText.String())
	}

	// One place frees: one waiting connection is accepted and answered,
	// the other still waits.
	_ = anon[0].Close()
	other := waiting[1-firstAnswered(t, waiting)]
	if err := answered(other, 500*time.Millisecond); !isTimeout(err) {
		t.Fatalf("the second waiting connection with no place: %v, want no answer and no close", err)
	}
	// An authenticated one leaves: the last one gets in.
	_ = authed[0].c.Close()
	if err := answered(other, 5*time.Second); err != nil {
		t.Fatalf("the second waiting connection after a second close: %v", err)
	}

	noRefusal(t, env.e)
	if g, p := peak(); g > bound || p > bound {
		t.Fatalf("peak: flexway_kafka_connections %d, places %d; want at most %d", g, p, bound)
	}
}

// dialWaiting connects to addr past max_connections and sends an
// ApiVersions: the TCP connect succeeds (the kernel's queue), the request
// waits.
func dialWaiting(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("a connection past max_connections is refused at the TCP level: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	sendApiVersions(t, c)
	return c
}

// firstAnswered waits up to 10 s for one of waiting to be answered, and
// returns its index; a waiting connection closed or reset fails the test.
func firstAnswered(t *testing.T, waiting []net.Conn) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for i, c := range waiting {
			err := answered(c, 100*time.Millisecond)
			if err == nil {
				return i
			}
			if !isTimeout(err) {
				t.Fatalf("waiting connection %d: %v", i, err)
			}
		}
	}
	t.Fatal("a place freed and no waiting connection was accepted")
	return -1
}

// L3, issue 13.7: the bound holds on the TLS port too. With
// max_connections: 2, two clients finish their TLS handshake; a third
// connects at the TCP level and its ClientHello stays unanswered until
// one of the two leaves.
func TestMaxConnectionsTLSPort(t *testing.T) {
	te := newTLSEnv(t, "    max_connections: 2\n")
	peak := gaugePeak(t, te.e)
	hello := func(name string, d time.Duration) (net.Conn, error) {
		raw, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", te.port), 5*time.Second)
		if err != nil {
			t.Fatalf("TCP connect to the TLS port: %v", err)
		}
		t.Cleanup(func() { raw.Close() })
		c := tls.Client(raw, &tls.Config{ServerName: name, RootCAs: te.ca.pool()})
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		return c, c.HandshakeContext(ctx)
	}
	boot := "bootstrap.shop." + sniDomain
	var open []net.Conn
	for i := 0; i < 2; i++ {
		c, err := hello(boot, 5*time.Second)
		if err != nil {
			t.Fatalf("TLS connection %d under the bound: %v", i+1, err)
		}
		open = append(open, c)
	}
	raw, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", te.port), 5*time.Second)
	if err != nil {
		t.Fatalf("a connection past max_connections is refused at the TCP level: %v", err)
	}
	t.Cleanup(func() { raw.Close() })
	third := tls.Client(raw, &tls.Config{ServerName: boot, RootCAs: te.ca.pool()})
	hs := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		hs <- third.HandshakeContext(ctx)
	}()
	select {
	case err := <-hs:
		t.Fatalf("the handshake past the bound ended (%v), want it waiting", err)
	case <-time.After(time.Second):
	}
	_ = open[0].Close()
	select {
	case err := <-hs:
		if err != nil {
			t.Fatalf("the waiting TLS connection after a close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a place freed and the waiting TLS connection was not accepted")
	}
	noRefusal(t, te.e)
	if g, p := peak(); g > 2 || p > 2 {
		t.Fatalf("peak: flexway_kafka_connections %d, places %d; want at most 2", g, p)
	}
}

// A listener port that cannot be bound fails the start, named in the
// error; the ports bound before it are closed again.
func TestListenerBindFailure(t *testing.T) {
	env := newTestEnvPorts(t, "", 2)
	// The second engine's first port is free, its second one is taken.
	snap := env.e.Snapshot()
	taken := fmt.Sprintf("127.0.0.1:%d", env.base+1)
	// Free the first port: stop the first engine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	env.e.Stop(ctx)
	hold, err := net.Listen("tcp", taken)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()

	e, err := New(context.Background(), snap, WithLoops(1))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop(ctx)
	errc := make(chan error, 1)
	go func() { errc <- e.Serve() }()
	rerr := e.Ready(ctx)
	if rerr == nil || !strings.Contains(rerr.Error(), taken) || !errors.Is(rerr, syscall.EADDRINUSE) {
		t.Fatalf("Ready with a port taken: %v, want address in use naming %s", rerr, taken)
	}
	if err := <-errc; err == nil || err.Error() != rerr.Error() {
		t.Fatalf("Serve returned %v, want %v", err, rerr)
	}
	// The first port was bound and is free again.
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", env.base))
	if err != nil {
		t.Fatalf("the port bound before the failure is still held: %v", err)
	}
	ln.Close()
}

// Stop closes every listener port and ends the accept goroutine: a new
// connection is refused by the kernel, not queued.
func TestStopClosesListeners(t *testing.T) {
	env := newTestEnvPorts(t, "", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := env.e.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-env.e.acc.done:
	default:
		t.Fatal("the accept goroutine still runs after Stop")
	}
	for i := 0; i < 2; i++ {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", env.base+i), 2*time.Second)
		if err == nil {
			c.Close()
			t.Fatalf("port %d still accepts after Stop", env.base+i)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("port %d after Stop: %v, want connection refused", env.base+i, err)
		}
	}
}
