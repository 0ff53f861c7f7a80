package engine

// Issue 11.3: memory bounded by the budgets, using the read pause.

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/engine/session"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/engine/conn"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// setFlowOff turns "the broker is not read until the client reads" off
// (true) or on again: the speed test compares both.
func setFlowOff(env *testEnv, off bool) {
	if off {
		env.e.env.Tune.FlowHigh.Store(math.MaxInt64)
		return
	}
	env.e.env.Tune.FlowHigh.Store(1 << 20)
}

// heldBytes is what the gateway holds in memory for the client of r: the
// client's unsent bytes and what its broker connection buffered. On cl's loop.
func heldBytes(cl *session.Client) int64 {
	n := int64(cl.Conn().Queued())
	if b := cl.State().Broker; b != nil {
		n += int64(b.Buffered())
	}
	return n
}

// fetchMax sends a Fetch of orders/0 from offset 0 for up to max bytes.
func (r *rawConn) fetchMax(max int32) {
	f := emptyFetch(100)
	f.ReplicaID = -1
	f.MaxBytes = max
	f.Topics[0].Partitions[0].PartitionMaxBytes = max
	r.send(f)
}

// liveHeap is the heap's live bytes once the collector ran twice (pools'
// victims dropped).
func liveHeap() int64 {
	var ms runtime.MemStats
	for i := 0; i < 2; i++ {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// The broker is not read until the client reads: a client that does not
// read an answer of several MiB costs the gateway about flowHigh (plus one
// read), the rest waits in the broker connection's kernel buffer (paused);
// once the client reads, the whole answer arrives and the broker is read
// again.
func TestFlowBrokerNotReadUntilClientReads(t *testing.T) {
	env := newTestEnv(t, "", noSplice())  // the pause's path (a TLS side; the splice's: TestSpliceStalledClient)
	produceDirect(t, env, 0, 24, 256<<10) // 6 MiB on orders/0, in batches of 768 KiB
	r := dialRaw(t, leaderOf0(t, env), "acme-app", env.keys["acme-app"])
	cl := clientOf(t, env.e, r)
	r.fetchMax(8 << 20)
	bound := env.e.env.Tune.FlowHigh.Load() + int64(env.e.opts.ReadBufferCap) + codec.MaxStreamUnit
	var peak int64
	paused := false
	// The answer comes from kfake under make test's load (both suites at
	// once): as long as rawDeadline, the bound of a raw read.
	deadline := time.Now().Add(rawDeadline)
	for stable := 0; stable < 50; time.Sleep(10 * time.Millisecond) {
		var held int64
		var p bool
		onLoopOf(t, cl, func() {
			held = heldBytes(cl)
			// nil: the broker connection is still dialed (TLS, SASL)
			if c := cl.State().Broker; c != nil && c.PausedFor(conn.PeerFull) {
				p = c.Paused()
			}
		})
		peak = max(peak, held)
		if p {
			paused = true
			stable++
		}
		if time.Now().After(deadline) {
			break
		}
	}
	if !paused {
		t.Fatalf("the broker connection was never paused while its client did not read (within %v; the gateway held %d bytes at most)", rawDeadline, peak)
	}
	if peak > bound {
		t.Fatalf("the gateway held %d bytes for a client that does not read (bound %d)", peak, bound)
	}
	_ = r.c.(*net.TCPConn).SetReadBuffer(4 << 20)
	resp := kmsg.FetchResponse{Version: 11}
	r.recv(&resp)
	if n := fetchedBytes(t, &resp); n < 5<<20 {
		t.Fatalf("the answer brought %d bytes", n)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		var again bool
		onLoopOf(t, cl, func() {
			c := cl.State().Broker
			again = c != nil && !c.PausedFor(conn.PeerFull) && c.Attached()
		})
		if again {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the broker connection was not read again once the client read")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.apiVersions()
	r.apiVersionsAnswer()
	t.Logf("held at most %d bytes (bound %d) for an unread answer of %d", peak, bound, fetchedBytes(t, &resp))
}

// tcpSockets lists the loopback sockets whose local port is port: state
// (hex, as /proc/net/tcp says it) and bytes not acknowledged.
func tcpSockets(t *testing.T, port int) (states []string, txq []int64) {
	t.Helper()
	eachTCPSocket(func(s tcpSocket) bool {
		if s.local == port {
			states, txq = append(states, s.state), append(txq, s.txq)
		}
		return true
	})
	return states, txq
}

// Issue 11.3, the hostile probe: 20 connections send Fetches of 64 MiB
// MaxBytes and never read. What the gateway holds for each stays within
// max_in_flight_bytes (plus one streamed window); after the write timeout
// closes them, the client side learns it (RST: no socket of theirs left in
// FIN-WAIT-1 with bytes queued) and the live heap is back within 8 MiB of
// where it started.
func TestFlowStalledReadersReleased(t *testing.T) {
	const (
		conns   = 20
		limit   = 4 << 20
		fetches = 4
	)
	env := newTestEnv(t, "    max_in_flight_bytes: 4MiB\n    max_response_bytes: 16MiB\n", WithWriteTimeout(3*time.Second))
	produceDirect(t, env, 0, 48, 256<<10) // 12 MiB on orders/0
	addr := leaderOf0(t, env)
	_, ps, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(ps)
	base := liveHeap()

	rs, mine := stalledReaders(t, env, addr, conns, fetches)
	window := int64(env.e.opts.ReadBufferCap) + codec.MaxStreamUnit
	seen, open, peakMem, peakBudget := watchStalledReaders(t, env, mine)
	if seen != conns || open != 0 {
		t.Fatalf("%d connections seen, %d still open after 20 s", seen, open)
	}
	if peakMem > limit+window {
		t.Fatalf("the gateway held %d bytes for one stalled connection (max_in_flight_bytes %d, window %d)", peakMem, limit, window)
	}
	// One answer alone may pass the bound: max_response_bytes/2 plus a batch.
	if peakBudget > limit+8<<20+256<<10 {
		t.Fatalf("a stalled connection had %d bytes reserved and unread (bound %d)", peakBudget, limit)
	}
	checkToldOfClose(t, rs, port)
	for _, r := range rs {
		_ = r.c.Close()
	}
	var heap int64
	deadline := time.Now().Add(10 * time.Second)
	for {
		heap = liveHeap()
		if heap-base <= 8<<20 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if heap-base > 8<<20 {
		t.Fatalf("live heap %d MiB after the stalled connections closed, %d MiB before", heap>>20, base>>20)
	}
	t.Logf("per connection: at most %d KiB held, %d KiB reserved+unread; live heap %+.1f MiB after the close", peakMem>>10, peakBudget>>10, float64(heap-base)/(1<<20))
}

// stalledReaders opens conns connections to addr as acme-app, each sending
// fetches Fetches of orders/0 for up to 64 MiB and reading nothing; mine
// holds their local addresses.
func stalledReaders(t *testing.T, env *testEnv, addr string, conns, fetches int) (rs []*rawConn, mine map[string]bool) {
	mine = map[string]bool{}
	for i := 0; i < conns; i++ {
		r := dialRaw(t, addr, "acme-app", env.keys["acme-app"])
		mine[r.c.LocalAddr().String()] = true
		for j := 0; j < fetches; j++ {
			f := emptyFetch(100)
			f.ReplicaID = -1
			f.MaxBytes = 64 << 20
			f.Topics[0].Partitions[0].PartitionMaxBytes = 64 << 20
			f.Topics[0].Partitions[0].FetchOffset = int64(j)
			r.send(f)
		}
		rs = append(rs, r)
	}
	return rs, mine
}

// watchStalledReaders watches the gateway's clients of the connections of
// mine until none is left open, or 20 s: how many it saw at once at the
// most, how many are still open, and the most one held in memory and had
// reserved and not read.
func watchStalledReaders(t *testing.T, env *testEnv, mine map[string]bool) (seen, open int, peakMem, peakBudget int64) {
	var mu sync.Mutex
	open = len(mine)
	deadline := time.Now().Add(20 * time.Second)
	for open > 0 && time.Now().Before(deadline) {
		n := 0
		onLoops(t, env.e, func(l *session.Loop) {
			mu.Lock()
			defer mu.Unlock()
			for cl := range l.Clients() {
				if a := cl.Conn().RemoteAddr(); a == nil || !mine[a.String()] {
					continue
				}
				n++
				peakMem = max(peakMem, heldBytes(cl))
				peakBudget = max(peakBudget, cl.State().Reserved+int64(cl.Conn().Queued()))
			}
		})
		seen = max(seen, n)
		open = n
		time.Sleep(20 * time.Millisecond)
	}
	return seen, open, peakMem, peakBudget
}

// checkToldOfClose: the client side of each of rs learns the close (its
// reads end, reset or end of stream), and no socket of the gateway's port
// is left in FIN-WAIT-1 with bytes queued.
func checkToldOfClose(t *testing.T, rs []*rawConn, port int) {
	for _, r := range rs {
		_ = r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, r.c); err != nil && os.IsTimeout(err) {
			t.Fatal("a stalled client was not told of the close")
		}
	}
	states, txq := tcpSockets(t, port)
	for i, st := range states {
		if st == "04" && txq[i] > 0 { // FIN_WAIT1
			t.Fatalf("a socket of the gateway's port %d is in FIN-WAIT-1 with %d bytes queued", port, txq[i])
		}
	}
}

// Issue 11.3: a client that pipelines Produce requests while its head
// request is held (its budget taken by an answer it does not read) is not
// read: its bytes wait in the kernel, the gateway's heap does not grow;
// once it reads, everything goes through, in order.
func TestFlowHeldClientPipeliningNotRead(t *testing.T) {
	const frames, recs, size = 512, 16, 4096 // 32 MiB of Produce requests

	// noSplice: the answer must wait in the gateway, not spliced.
	env := newTestEnv(t, "    max_in_flight_bytes: 1MiB\n", WithWriteTimeout(60*time.Second), noSplice())
	produceDirect(t, env, 0, 24, 256<<10) // 6 MiB on orders/0
	r := dialRaw(t, leaderOf0(t, env), "acme-app", env.keys["acme-app"])
	cl := clientOf(t, env.e, r)
	r.fetchMax(8 << 20) // its answer is not read: the budget is taken
	fetchCorr := r.corr
	waitUntil(t, 10*time.Second, "the Fetch answer does not wait in the gateway", func() bool {
		var out int
		onLoopOf(t, cl, func() { out = cl.Conn().Queued() })
		return out > 512<<10
	})
	heap0, rss0 := memNow(t)

	// The writer blocks: its bytes wait in the kernel.
	pr := startRawProducer(r.c, 1000, frames, recs, size, -1)
	last := pr.blocked(t, fmt.Sprintf("the client wrote all its %d requests while held", frames))
	var held, in int
	var paused bool
	onLoopOf(t, cl, func() {
		held, in = boolInt(cl.State().Held), cl.Conn().Buffered()
		paused = cl.Conn().Paused()
	})
	heap1, rss1 := memNow(t)
	t.Logf("held client: wrote %.1f MiB of %d MiB then blocked; gateway buffered %d KiB of it; heap %+.1f MiB, RSS %+.1f MiB",
		float64(last)/(1<<20), frames*recs*size>>20, in>>10, float64(heap1-heap0)/(1<<20), float64(rss1-rss0)/(1<<20))
	if held != 1 || !paused {
		t.Fatalf("held %d, paused %v: want a held client, not read", held, paused)
	}
	if in > 1<<20 {
		t.Fatalf("the gateway buffered %d bytes of a held client's requests", in)
	}
	if heap1-heap0 > 8<<20 {
		t.Fatalf("the heap grew by %d MiB while the held client kept writing", (heap1-heap0)>>20)
	}

	// It reads: the Fetch answer, then every Produce answer in order.
	_ = r.c.(*net.TCPConn).SetReadBuffer(4 << 20)
	b, err := readFrame(r.c, nil)
	if err != nil {
		t.Fatalf("the Fetch answer: %v", err)
	}
	if corr := int32(binary.BigEndian.Uint32(b)); corr != fetchCorr {
		t.Fatalf("first answer has correlation id %d, want the Fetch's %d", corr, fetchCorr)
	}
	if err := readProduceAnswers(r.c, 1000, frames); err != nil {
		t.Fatalf("Produce answers: %v", err)
	}
	if err := <-pr.wrote; err != nil {
		t.Fatal(err)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// stallListener is a broker's listener whose connections read nothing
// while it is stalled: the broker's receive buffer fills, then the
// gateway's send buffer, as before a broker slower than its clients.
type stallListener struct {
	net.Listener
	mu      sync.Mutex
	cond    *sync.Cond
	stalled bool
}

func stallingListen(network, addr string) (*stallListener, error) {
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, err
	}
	l := &stallListener{Listener: ln}
	l.cond = sync.NewCond(&l.mu)
	return l, nil
}

func (l *stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return stallConn{c, l}, nil
}

func (l *stallListener) stall(v bool) {
	l.mu.Lock()
	l.stalled = v
	l.mu.Unlock()
	l.cond.Broadcast()
}

type stallConn struct {
	net.Conn
	l *stallListener
}

func (c stallConn) Read(b []byte) (int, error) {
	c.l.mu.Lock()
	for c.l.stalled {
		c.l.cond.Wait()
	}
	c.l.mu.Unlock()
	return c.Conn.Read(b)
}

// The client is not read until its broker takes: a producer that writes
// 48 MiB while the broker reads nothing costs the gateway about flowHigh
// (plus a read and a batch), not its max_in_flight_bytes (64 MiB): the
// rest waits in the kernel and the producer's writes block. Once the
// broker reads again every request is answered and every record is there,
// in order.
func TestFlowClientNotReadUntilBrokerTakes(t *testing.T) {
	skipOnRealKafka(t)
	flowClientNotRead(t)
}

func flowClientNotRead(t *testing.T) {
	env, sl := kfakeEnv(t, 1)
	r := leaderConn(t, env)
	cl := clientOf(t, env.e, r)

	const n, per = 64, 3 // 64 requests of 768 KiB (records of 256 KiB)
	var vals [][]byte
	frames := make([][]byte, n+1)
	for i := range frames {
		frames[i] = rawProduceFrame(r, "orders", -1, recordBatch(&vals, i*per, per))
	}
	answer := func(i int) { t.Helper(); produceAnswered(t, r, i) }
	// The first request answered: the broker connection is up.
	if _, err := r.c.Write(frames[0]); err != nil {
		t.Fatal(err)
	}
	answer(0)

	sl.stall(true)
	pauses := env.e.env.Series.ClientPauses.Load()
	var written atomic.Int64
	werr := make(chan error, 1)
	go func() {
		_ = r.c.SetWriteDeadline(time.Now().Add(60 * time.Second))
		for _, f := range frames[1:] {
			if _, err := r.c.Write(f); err != nil {
				werr <- err
				return
			}
			written.Add(int64(len(f)))
		}
		werr <- nil
	}()
	bound := env.e.env.Tune.FlowHigh.Load() + 2*int64(env.e.opts.ReadBufferCap) + session.BatchMax
	var peak int64
	stable := 0
	for deadline := time.Now().Add(15 * time.Second); stable < 50 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var held int64
		var paused bool
		onLoopOf(t, cl, func() {
			held = int64(cl.Conn().Buffered())
			if b := cl.State().Broker; b != nil {
				held += int64(b.Queued())
			}
			paused = cl.Conn().PausedFor(conn.PeerFull) && cl.Conn().Paused()
		})
		peak = max(peak, held)
		if paused {
			stable++
		}
	}
	total := int64(0)
	for _, f := range frames[1:] {
		total += int64(len(f))
	}
	if stable < 50 {
		t.Fatalf("the client was not kept paused while its broker read nothing (pauses %d)", env.e.env.Series.ClientPauses.Load()-pauses)
	}
	if w := written.Load(); w >= total {
		t.Fatalf("the producer wrote all its %d bytes while the broker read nothing: they are not waiting in the kernel", w)
	}
	if peak > bound {
		t.Fatalf("the gateway held %d bytes for a broker that reads nothing (bound %d; the producer wrote %d)", peak, bound, written.Load())
	}
	t.Logf("held at most %d bytes (bound %d) while the producer had written %d of %d", peak, bound, written.Load(), total)

	sl.stall(false)
	for i := 1; i <= n; i++ {
		answer(i)
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	consumeValues(t, env, vals)
}
