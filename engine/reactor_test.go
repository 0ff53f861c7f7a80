package engine

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/engine/session"

	"github.com/flexway/flexway/engine/conn"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// onLoops runs fn on every loop of the engine and waits for all.
func onLoops(t *testing.T, e *Engine, fn func(l *session.Loop)) {
	t.Helper()
	var wg sync.WaitGroup
	for _, l := range e.env.Loops() {
		wg.Add(1)
		l := l
		if err := l.Run("test", func() {
			defer wg.Done()
			fn(l)
		}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

// Each client connection has its own broker connection, enrolled on the
// same event loop (issue 2, item 3; U2).
func TestUpstreamOnClientLoop(t *testing.T) {
	env := newTestEnv(t, "")
	var clients []*kgo.Client
	for i := 0; i < 4; i++ {
		cl := env.client("acme-app")
		produceN(t, cl, "orders", 3, "x")
		clients = append(clients, cl)
	}
	pairs, same := 0, 0
	upstreams := map[*conn.Conn]bool{}
	var mu sync.Mutex // the loops run fn concurrently
	onLoops(t, env.e, func(l *session.Loop) {
		mu.Lock()
		defer mu.Unlock()
		for cl := range l.Clients() {
			b := cl.State().Broker
			if b == nil {
				continue
			}
			pairs++
			if b.EventLoop() == cl.Conn().EventLoop() && cl.Loop() == l {
				same++
			}
			upstreams[b] = true
		}
	})
	if pairs < 4 {
		t.Fatalf("%d connection pairs, want at least 4", pairs)
	}
	if same != pairs {
		t.Fatalf("%d of %d broker connections on their client's loop", same, pairs)
	}
	if len(upstreams) != pairs {
		t.Fatal("a broker connection is shared between clients")
	}
}

// A panic in a callback closes that one connection and is logged with its
// stack; the other tenants' connections go on (issue 2, item 3).
func TestPanicClosesOneConnection(t *testing.T) {
	env := newTestEnv(t, "")
	acme := env.client("acme-app")
	produceN(t, acme, "orders", 2, "before")
	var fired atomic.Bool
	hook := func(cl *session.Client) {
		if cl.State().Ident != nil && cl.State().Ident.Tenant == "globex" && fired.CompareAndSwap(false, true) {
			panic("injected by the test")
		}
	}
	env.e.env.Hooks.Traffic.Store(&hook)
	globex := env.client("globex-app", kgo.RequestRetries(0), kgo.RecordRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = globex.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("y")}).FirstErr()
	env.waitLog(5*time.Second, "internal error", "injected by the test", "goroutine")
	if !fired.Load() {
		t.Fatal("the hook did not fire")
	}
	produceN(t, acme, "orders", 2, "after") // acme is undisturbed
}

// rawConn is a hand-driven Kafka client: it authenticates with PLAIN and
// then sends frames it chooses, and reads only when told.
type rawConn struct {
	t    *testing.T
	c    net.Conn
	corr int32
}

func dialRaw(t *testing.T, addr, user, pass string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// A small receive window: the kernel must not absorb what the test
	// wants the gateway to hold (loopback autotunes up to 32 MiB).
	_ = c.(*net.TCPConn).SetReadBuffer(16 << 10)
	// Closed at the test's end, not before: a connection the test drops
	// (a stalled client) would otherwise be closed by the collector
	// (net.Conn's finalizer) at any moment, and its bytes given back.
	t.Cleanup(func() { _ = c.Close() })
	r := &rawConn{t: t, c: c}
	if hsr := r.saslPlain(user, pass); hsr.ErrorCode != 0 {
		t.Fatalf("handshake: %d", hsr.ErrorCode)
	}
	if aur := r.authAnswer(); aur.ErrorCode != 0 {
		t.Fatalf("authenticate: %d", aur.ErrorCode)
	}
	return r
}

// handshake sends SaslHandshake v1 naming mech and returns its answer.
func (r *rawConn) handshake(mech string) *kmsg.SASLHandshakeResponse {
	r.t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, mech
	r.send(hs)
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.Version = 1
	r.recv(resp)
	return resp
}

// saslPlain sends SaslHandshake v1 (PLAIN), reads its answer (returned),
// then sends SaslAuthenticate v1 with user and pass: the caller reads its
// answer (authAnswer) or waits for the close.
func (r *rawConn) saslPlain(user, pass string) *kmsg.SASLHandshakeResponse {
	r.t.Helper()
	hs := r.handshake("PLAIN")
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version = 1
	au.SASLAuthBytes = []byte("\x00" + user + "\x00" + pass)
	r.send(au)
	return hs
}

// authAnswer reads a SaslAuthenticate v1 answer.
func (r *rawConn) authAnswer() *kmsg.SASLAuthenticateResponse {
	r.t.Helper()
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.Version = 1
	r.recv(resp)
	return resp
}

func (r *rawConn) send(req kmsg.Request) {
	r.corr++
	b := []byte{0, 0, 0, 0}
	b = codec.AppendRequestHeader(b, req.Key(), req.GetVersion(), r.corr, []byte("raw"), false, req.IsFlexible())
	b = req.AppendTo(b)
	codec.PutSize(b, len(b)-4)
	r.c.SetWriteDeadline(time.Now().Add(rawDeadline))
	if _, err := r.c.Write(b); err != nil {
		r.t.Fatalf("send: %v", err)
	}
}

// rawDeadline bounds a raw connection's send and recv: far above what an
// answer takes on a busy machine (a real broker's JVM under make
// test-stress's load took over 5 s), so that it only turns a hang into a
// failure (issue 21.1).
const rawDeadline = 30 * time.Second

func (r *rawConn) recv(resp kmsg.Response) {
	r.c.SetReadDeadline(time.Now().Add(rawDeadline))
	var sz [4]byte
	if _, err := io.ReadFull(r.c, sz[:]); err != nil {
		r.t.Fatalf("recv: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(r.c, b); err != nil {
		r.t.Fatalf("recv: %v", err)
	}
	_, body, err := codec.ParseResponseHeader(b, resp.Key(), resp.GetVersion())
	if err != nil {
		r.t.Fatal(err)
	}
	if err := resp.ReadFrom(body); err != nil {
		r.t.Fatalf("decode %T: %v", resp, err)
	}
}

// B2, B3: a consumer that stops reading its Fetch answers holds at most
// the connection's in-flight bound (one answer crosses alone), the broker
// is not asked for more, and the connection is closed after the write
// timeout (30 s in production, 2 s here).
func TestStalledConsumerBoundedThenClosed(t *testing.T) {
	const limit = 1 << 20
	env := newTestEnv(t, "    max_in_flight_bytes: 1MiB\n    max_response_bytes: 2MiB\n", WithWriteTimeout(2*time.Second))
	// 8 MiB of records to read; a connection to the leader of partition 0.
	fillOrders(t, env, 80)
	leaderAddr := leaderOf0(t, env)
	r := dialRaw(t, leaderAddr, "acme-app", env.keys["acme-app"])
	// 200 Fetches of up to 1 MiB each, never read: well over 40 MiB if
	// nothing bounded them (more than the kernel's socket buffers hold).
	for i := 0; i < 200; i++ {
		f := kmsg.NewPtrFetchRequest()
		f.Version = 11
		f.ReplicaID = -1
		f.MaxWaitMillis = 100
		f.MaxBytes = 1 << 20
		f.SessionEpoch = -1
		tp := kmsg.NewFetchRequestTopic()
		tp.Topic = "orders"
		pp := kmsg.NewFetchRequestTopicPartition()
		pp.Partition = 0
		pp.FetchOffset = int64(i % 70)
		pp.PartitionMaxBytes = 1 << 20
		tp.Partitions = append(tp.Partitions, pp)
		f.Topics = append(f.Topics, tp)
		r.send(f)
	}
	// Watch what the gateway holds for that connection until it closes it.
	var peak int64
	var mu sync.Mutex
	closed := false
	deadline := time.Now().Add(30 * time.Second) // the write timeout (2 s), and room for a busy machine
	for time.Now().Before(deadline) && !closed {
		found := false
		onLoops(t, env.e, func(l *session.Loop) {
			mu.Lock()
			defer mu.Unlock()
			for cl := range l.Clients() {
				if cl.State().Ident != nil && cl.State().Corr > 0 && cl.State().Node >= 0 && cl.State().Requests >= 0 {
					if string(cl.Conn().RemoteAddr().String()) == r.c.LocalAddr().String() {
						found = true
						held := cl.State().Reserved + int64(cl.Conn().Queued())
						if held > peak {
							peak = held
						}
					}
				}
			}
		})
		if !found && peak > 0 {
			closed = true
		}
		time.Sleep(50 * time.Millisecond)
	}
	if peak == 0 {
		t.Fatal("the stalled connection was never seen holding bytes")
	}
	// One answer alone may exceed the bound (at most max_response_bytes / 2 plus a batch).
	if peak > limit+(1<<20)+(256<<10) {
		t.Fatalf("the gateway held %d bytes for a connection bounded at %d", peak, limit)
	}
	if !closed {
		t.Fatal("the connection that reads nothing was not closed after the write timeout")
	}
	env.waitLog(10*time.Second, "does not read its answers")
	t.Logf("peak held for the stalled connection: %d bytes (bound %d)", peak, limit)
}
