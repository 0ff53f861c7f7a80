package engine

// B2 (issue 33.1): what a client sent and the gateway has not handled yet
// is counted in the connection's, the tenant's and the replica's in-flight
// budgets, and the client is not read while a budget is reached. A request
// that can never fit its connection's budget is refused.

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The plain configuration.
const inboundListener = "    max_in_flight_bytes: 8MiB\n    max_tenant_in_flight_bytes: 32MiB\n" +
	"    max_total_in_flight_bytes: 256MiB\n    max_request_bytes: 16MiB\n"

const (
	inboundShare = 32 << 20 // max_tenant_in_flight_bytes
	inboundConns = 24
)

// partialMetadata is the head of a Metadata request announcing size bytes
// of frame, followed by filler up to sent bytes in all.
func partialMetadata(size, sent int) []byte {
	b := []byte{0, 0, 0, 0}
	b = codec.AppendRequestHeader(b, 3, 4, 1, []byte("partial"), false, false)
	codec.PutSize(b, size)
	return append(b, bytes.Repeat([]byte{0xff}, sent-len(b))...)
}

// sendPartial writes b to r until the gateway stops taking it (a read
// paused: the kernel's buffers fill) or the connection ends; the write
// blocks meanwhile, bounded by deadline.
func sendPartial(r *rawConn, b []byte, deadline time.Time) {
	_ = r.c.SetWriteDeadline(deadline)
	_, _ = r.c.Write(b)
}

// samplePeak keeps the largest value of f until stop is closed.
func samplePeak(f func() int64, stop <-chan struct{}) *atomic.Int64 {
	var peak atomic.Int64
	go func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			if v := f(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return &peak
}

// Twenty-four connections of one principal each announce a 7 MiB Metadata
// request (within the connection's 8 MiB) and send 6 MiB of it: the
// tenant's share (32 MiB) holds four frames, the others are not read. The
// bytes counted stay within the share plus one read per connection, the
// heap with them; another tenant produces and consumes meanwhile; every
// byte is given back when the connections close.
func TestRequestsBeingReadCounted(t *testing.T) {
	env := newTestEnv(t, inboundListener)
	b := &env.e.env.Bounds
	readCap := int64(env.e.opts.ReadBufferCap)
	base := liveHeap()
	stop := make(chan struct{})
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}()
	peakReq := samplePeak(b.Requests.Used, stop)
	stopReplica := make(chan struct{}) // before another tenant's clients count there too
	peakReplica := samplePeak(b.Replica.Used, stopReplica)

	frame := partialMetadata(7<<20, 6<<20)
	rs := make([]*rawConn, inboundConns)
	for i := range rs {
		rs[i] = dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	}
	var wg sync.WaitGroup
	deadline := time.Now().Add(90 * time.Second)
	for _, r := range rs {
		wg.Add(1)
		go func() { defer wg.Done(); sendPartial(r, frame, deadline) }()
	}
	waitUntil(t, 60*time.Second, "the tenant's share reached by requests being read", func() bool {
		return env.e.env.Series.ReadWaits.Load() > 0 && b.Requests.Used() >= inboundShare-7<<20
	})
	if g := scrape(t, env, `flexway_engine_in_flight_bytes{scope="requests"}`); g <= 0 {
		t.Errorf(`flexway_engine_in_flight_bytes{scope="requests"} = %d while requests are read`, g)
	}
	growth := liveHeap() - base

	close(stopReplica)
	if r, q := b.Replica.Used(), b.Requests.Used(); r < q {
		t.Errorf("the replica counts %d bytes, fewer than the requests being read (%d)", r, q)
	}
	// Another tenant is served meanwhile.
	globexServed(t, env)

	bound := int64(inboundShare) + inboundConns*readCap
	if p := peakReq.Load(); p > bound {
		t.Errorf("requests being read held %d bytes, over the tenant's share %d plus one read per connection (%d)", p, inboundShare, inboundConns*readCap)
	}
	if p := peakReplica.Load(); p > bound {
		t.Errorf("the replica counted %d bytes, over %d", p, bound)
	}
	// The heap: the frames held (the share), their buffers' slack, one
	// read per connection, and the test's own clients and kfake.
	if margin := int64(24 << 20); growth > inboundShare+margin {
		t.Errorf("the heap grew by %d bytes, over the share %d plus %d", growth, inboundShare, margin)
	}
	for _, r := range rs {
		_ = r.c.Close()
	}
	wg.Wait()
	close(stop)
	waitUntil(t, 10*time.Second, "every byte given back", func() bool {
		return b.Requests.Used() == 0 && b.Replica.Used() == 0
	})
	t.Logf("requests peak %d bytes, replica peak %d (bound %d); %d read pauses; heap +%d bytes",
		peakReq.Load(), peakReplica.Load(), bound, env.e.env.Series.ReadWaits.Load(), growth)
}

// globexServed produces a record as globex and reads it back.
func globexServed(t *testing.T, env *testEnv) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	val := []byte("globex served at " + time.Now().String())
	prod := env.client("globex-app")
	defer prod.Close()
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: val}).FirstErr(); err != nil {
		t.Fatalf("globex's produce while acme's requests are held: %v", err)
	}
	cons := env.client("globex-app", kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cons.Close()
	for {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("globex's record not read back while acme's requests are held: %v", err)
		}
		found := false
		fs.EachRecord(func(r *kgo.Record) { found = found || bytes.Equal(r.Value, val) })
		if found {
			return
		}
	}
}

// A request that can never fit its connection's budget (16 MiB against
// max_in_flight_bytes 8 MiB, within max_request_bytes) is refused at its
// head, with a line, rather than gathered.
func TestRequestOverConnectionBudgetRefused(t *testing.T) {
	env := newTestEnv(t, inboundListener)
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	go sendPartial(r, partialMetadata(16<<20, 1<<20), time.Now().Add(20*time.Second))
	r.expectClosed(10 * time.Second)
	env.waitLog(5*time.Second, "kafka connection closed: request larger than max_in_flight_bytes", "tenant=acme", "size=16777216")
	if u := env.e.env.Bounds.Replica.Used(); u != 0 {
		waitUntil(t, 5*time.Second, "every byte given back", func() bool { return env.e.env.Bounds.Replica.Used() == 0 })
	}

	// At the bound: a frame of 8 MiB in all fits; it is counted at its
	// whole size from its head on, and read.
	at := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	go sendPartial(at, partialMetadata(8<<20-codec.SizeLen, 4<<20), time.Now().Add(20*time.Second))
	waitUntil(t, 10*time.Second, "the frame at the bound counted whole", func() bool {
		return env.e.env.Bounds.Requests.Used() == 8<<20
	})
	over := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	go sendPartial(over, partialMetadata(8<<20-codec.SizeLen+1, 1<<20), time.Now().Add(20*time.Second))
	over.expectClosed(10 * time.Second)
	_ = at.c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := at.c.Read(make([]byte, 1)); err == nil || !isTimeout(err) {
		t.Fatalf("the connection at the bound was closed: %v", err)
	}
}

// The same over TLS: what a client sent is counted once decrypted (and
// while still ciphertext): eight certificate clients of acme each announce
// a 7 MiB Metadata request and send 6 MiB of it; four fit the tenant's
// 32 MiB, the others are not read; every byte is given back at the close.
func TestRequestsBeingReadCountedOverTLS(t *testing.T) {
	te := newTLSEnv(t, inboundListener)
	b := &te.e.env.Bounds
	readCap := int64(te.e.opts.ReadBufferCap)
	stop := make(chan struct{})
	defer close(stop)
	peak := samplePeak(b.Requests.Used, stop)
	const conns = 8
	w := writePartialOverTLS(t, te, conns, tls.VersionTLS12)
	waitUntil(t, 60*time.Second, "the tenant's share reached over TLS", func() bool {
		return te.e.env.Series.ReadWaits.Load() > 0 && b.Requests.Used() >= inboundShare-7<<20
	})
	// One read per connection, what its handshake's worker was fed and
	// had not read (TestHandshakeFeedBounded), and a TLS record's worth
	// decrypted ahead.
	bound := int64(inboundShare) + conns*(readCap+int64(configs.UnauthenticatedMaxRequestBytes)+32<<10)
	if p := peak.Load(); p > bound {
		t.Errorf("requests being read over TLS held %d bytes, over %d", p, bound)
	}
	w.close()
	waitUntil(t, 10*time.Second, "every byte given back", func() bool { return b.Requests.Used() == 0 })
	t.Logf("over TLS: requests peak %d bytes (bound %d), %d read pauses", peak.Load(), bound, te.e.env.Series.ReadWaits.Load())
}

// B2, L3: what a TLS client sends while its handshake's worker has not
// ended (a TLS 1.3 client sends as soon as its Finished is out) is fed to
// the worker up to one unauthenticated request's bound, counted, and the
// client is not read past it: the rest waits in the kernel. When the
// handshake ends the client is read on, and every byte is given back at
// its close. Here the worker is held in VerifyConnection while four
// certificate clients each send 6 MiB of a 7 MiB request.
func TestHandshakeFeedBounded(t *testing.T) {
	te := newTLSEnv(t, inboundListener)
	b := &te.e.env.Bounds
	readCap := int64(te.e.opts.ReadBufferCap)
	gate := make(chan struct{})
	var verifying atomic.Int32
	// Set before any client dials; the handshakes' workers read it.
	te.e.env.Sec.TLSConfig.VerifyConnection = func(tls.ConnectionState) error {
		verifying.Add(1)
		<-gate
		return nil
	}
	opened := false
	defer func() {
		if !opened {
			close(gate)
		}
	}()
	stop := make(chan struct{})
	defer close(stop)
	peak := samplePeak(b.Requests.Used, stop)
	const conns = 4
	w := writePartialOverTLS(t, te, conns, tls.VersionTLS13)
	written := &w.written
	waitUntil(t, 20*time.Second, "each client's reads paused in its handshake", func() bool {
		return verifying.Load() == conns && te.e.env.Series.ReadWaits.Load() >= conns
	})
	bound := int64(conns) * (readCap + int64(configs.UnauthenticatedMaxRequestBytes))
	if p := peak.Load(); p > bound {
		t.Errorf("during the handshakes the gateway held %d bytes, over %d (one read and one unauthenticated request each)", p, bound)
	}
	if n := written.Load(); n != 0 {
		t.Errorf("%d clients wrote their 6 MiB while their handshake was held: read past the bound", n)
	}
	handshakes := peak.Load()
	close(gate)
	opened = true
	whole := int64(conns) * (7<<20 + codec.SizeLen)
	waitUntil(t, 30*time.Second, "every client read on after its handshake", func() bool {
		return written.Load() == conns && b.Requests.Used() == whole
	})
	w.close()
	waitUntil(t, 10*time.Second, "every byte given back", func() bool { return b.Requests.Used() == 0 })
	t.Logf("during the handshakes: peak %d bytes (bound %d); after: %d", handshakes, bound, whole)
}

// partialWriters are certificate clients each writing 6 MiB of a 7 MiB
// Metadata request (partialMetadata) over TLS.
type partialWriters struct {
	cs      []net.Conn
	wg      sync.WaitGroup
	written atomic.Int32 // writes that completed
}

// writePartialOverTLS dials n certificate clients (TLS minV up to 1.3) and
// starts their writes.
func writePartialOverTLS(t *testing.T, te *tlsEnv, n int, minV uint16) *partialWriters {
	t.Helper()
	frame := partialMetadata(7<<20, 6<<20)
	cert := te.client["billing"]
	dial := te.dialer(&cert, minV, tls.VersionTLS13)
	w := &partialWriters{}
	for i := 0; i < n; i++ {
		c, err := dial(context.Background(), "tcp", te.boot)
		if err != nil {
			t.Fatal(err)
		}
		w.cs = append(w.cs, c)
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			_ = c.SetWriteDeadline(time.Now().Add(60 * time.Second))
			if _, err := c.Write(frame); err == nil {
				w.written.Add(1)
			}
		}()
	}
	return w
}

// close closes the clients and waits for their writes.
func (w *partialWriters) close() {
	for _, c := range w.cs {
		_ = c.Close()
	}
	w.wg.Wait()
}
