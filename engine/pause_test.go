package engine

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/engine/conn"
	"github.com/panjf2000/gnet/v2"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// onLoopOf runs fn on cl's loop and waits for it.
func onLoopOf(t *testing.T, cl *client, fn func()) {
	t.Helper()
	done := make(chan struct{})
	if err := cl.lp.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		defer close(done)
		fn()
		if cl.lp.fc != nil {
			cl.lp.fc.Settle() // a safe point: the pauses fn asked are applied
		}
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not run the function")
	}
}

// clientOf finds the gateway's client of the raw connection r.
func clientOf(t *testing.T, e *Engine, r *rawConn) *client {
	t.Helper()
	want := r.c.LocalAddr().String()
	var found atomic.Pointer[client]
	onLoops(t, e, func(l *loop) {
		for cl := range l.clients {
			if a := cl.c.RemoteAddr(); a != nil && a.String() == want {
				found.Store(cl)
			}
		}
	})
	cl := found.Load()
	if cl == nil {
		t.Fatalf("no client for %s", want)
	}
	return cl
}

// pauseState is a handle's state as the tests wait for it.
type pauseState int

const (
	rpAttached pauseState = iota
	rpPaused
	rpResuming
	rpClosed
)

func stateOf(c *conn.Conn) pauseState {
	switch c.State() {
	case "attached":
		return rpAttached
	case "detached":
		return rpPaused
	case "resuming":
		return rpResuming
	}
	return rpClosed
}

// pauseClient pauses cl's reads (the bare reason) and waits until its
// socket is detached.
func pauseClient(t *testing.T, cl *client) *conn.Conn {
	t.Helper()
	onLoopOf(t, cl, func() { cl.c.Pause(conn.Held) })
	waitState(t, cl, cl.c, rpPaused)
	return cl.c
}

// pauseUp pauses a broker connection's reads (the bare reason).
func pauseUp(u *upstreamConn) *conn.Conn {
	u.c.Pause(conn.Held)
	return u.c
}

// pauseCl pauses a client's reads (the bare reason); nil when it cannot
// be paused now (closed, or in its TLS handshake).
func pauseCl(cl *client) *conn.Conn {
	if !cl.pause(conn.Held) {
		return nil
	}
	return cl.c
}

// resume returns the function that drops the bare reason of c.
func resume(c *conn.Conn) func() { return func() { c.Resume(conn.Held) } }

func waitState(t *testing.T, cl *client, p *conn.Conn, want pauseState) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var st pauseState
		onLoopOf(t, cl, func() { st = stateOf(p) })
		if st == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pause state %d, want %d", st, want)
		}
		time.Sleep(time.Millisecond)
	}
}

func resumeClient(t *testing.T, cl *client, p *conn.Conn) {
	t.Helper()
	onLoopOf(t, cl, resume(p))
	waitState(t, cl, p, rpAttached)
}

// openFds lists the process's descriptors: number -> what it points to.
func openFds(t *testing.T) map[int]string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	out := map[int]string{}
	for _, e := range ents {
		n, _ := strconv.Atoi(e.Name())
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
			out[n] = l
		}
	}
	return out
}

// settledFds counts the descriptors once the garbage collector's
// finalizers closed what nothing references any more (connections of the
// env's own clients).
func settledFds(t *testing.T) int {
	t.Helper()
	for i := 0; i < 2; i++ {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	return len(openFds(t))
}

// waitFds waits until the process holds want descriptors (settled).
func waitFds(t *testing.T, want int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := settledFds(t)
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d descriptors open, want %d", what, n, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// memNow is the live heap (after a GC) and the resident set, in bytes.
func memNow(t *testing.T) (heap, rss int64) {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			rss = kb << 10
		}
	}
	return int64(ms.HeapInuse), rss
}

// appendProduce appends a Produce request (v8, acks=1) to orders/0 with
// one batch of recs records of size bytes, numbered from first: each value
// begins with its number (8 digits). A batch's CRC is checked by the broker.
func appendProduce(dst []byte, corr int32, first, recs, size int) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = codec.AppendRequestHeader(dst, 0, 8, corr, []byte("raw"), false, false)
	dst = kbin.AppendNullableString(dst, nil) // transactional id
	dst = kbin.AppendInt16(dst, 1)            // acks
	dst = kbin.AppendInt32(dst, 10000)
	dst = kbin.AppendArrayLen(dst, 1)
	dst = kbin.AppendString(dst, "orders")
	dst = kbin.AppendArrayLen(dst, 1)
	dst = kbin.AppendInt32(dst, 0)
	recsLenAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	batch := len(dst)
	now := time.Now().UnixMilli()
	dst = kbin.AppendInt64(dst, 0)  // first offset
	dst = kbin.AppendInt32(dst, 0)  // length, patched
	dst = kbin.AppendInt32(dst, -1) // partition leader epoch
	dst = kbin.AppendInt8(dst, 2)   // magic
	dst = kbin.AppendInt32(dst, 0)  // CRC, patched
	dst = kbin.AppendInt16(dst, 0)  // attributes
	dst = kbin.AppendInt32(dst, int32(recs-1))
	dst = kbin.AppendInt64(dst, now)
	dst = kbin.AppendInt64(dst, now)
	dst = kbin.AppendInt64(dst, -1) // producer id
	dst = kbin.AppendInt16(dst, -1)
	dst = kbin.AppendInt32(dst, -1)
	dst = kbin.AppendInt32(dst, int32(recs))
	for i := 0; i < recs; i++ {
		bodyLen := 1 + 1 + kbin.VarintLen(int32(i)) + 1 + kbin.VarintLen(int32(size)) + size + 1
		dst = kbin.AppendVarint(dst, int32(bodyLen))
		dst = append(dst, 0)                   // attributes
		dst = kbin.AppendVarlong(dst, 0)       // timestamp delta
		dst = kbin.AppendVarint(dst, int32(i)) // offset delta
		dst = kbin.AppendVarint(dst, -1)       // key: null
		dst = kbin.AppendVarint(dst, int32(size))
		v := len(dst)
		dst = fmt.Appendf(dst, "%08d", first+i)
		for len(dst)-v < size {
			dst = append(dst, 'p')
		}
		dst = kbin.AppendVarint(dst, 0) // headers
	}
	binary.BigEndian.PutUint32(dst[batch+8:], uint32(len(dst)-batch-12))
	binary.BigEndian.PutUint32(dst[batch+17:], crc32.Checksum(dst[batch+21:], crc32.MakeTable(crc32.Castagnoli)))
	binary.BigEndian.PutUint32(dst[recsLenAt:], uint32(len(dst)-batch))
	codec.PutSize(dst[start:], len(dst)-start-4)
	return dst
}

// readProduceAnswers reads n Produce answers on c, in order of correlation
// id from 1, each without error.
func readProduceAnswers(c net.Conn, n int) error {
	var sz [4]byte
	buf := make([]byte, 0, 1024)
	for i := 1; i <= n; i++ {
		_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
		if _, err := io.ReadFull(c, sz[:]); err != nil {
			return fmt.Errorf("answer %d: %w", i, err)
		}
		size := int(binary.BigEndian.Uint32(sz[:]))
		if cap(buf) < size {
			buf = make([]byte, size)
		}
		b := buf[:size]
		if _, err := io.ReadFull(c, b); err != nil {
			return fmt.Errorf("answer %d: %w", i, err)
		}
		corr, body, err := codec.ParseResponseHeader(b, 0, 8)
		if err != nil {
			return err
		}
		if corr != int32(i) {
			return fmt.Errorf("answer %d has correlation id %d", i, corr)
		}
		resp := kmsg.ProduceResponse{Version: 8}
		if err := resp.ReadFrom(body); err != nil {
			return err
		}
		for _, tp := range resp.Topics {
			for _, pp := range tp.Partitions {
				if pp.ErrorCode != 0 {
					return fmt.Errorf("answer %d: error code %d", i, pp.ErrorCode)
				}
			}
		}
	}
	return nil
}

// noCloseLine fails if the gateway logged a close since the log channel
// was last read.
func noCloseLine(t *testing.T, env *testEnv) {
	t.Helper()
	for {
		select {
		case line := <-env.logs.ch:
			if strings.Contains(line, "closed") {
				t.Fatalf("a close was logged: %s", line)
			}
		default:
			return
		}
	}
}

// Issue 11.2: a paused connection's bytes wait in the kernel. A producer is
// paused mid-stream (half a request already read by the gateway), then
// writes 64 MiB: its writes block once the socket buffers are full, the
// gateway's heap and RSS stay where they were; after the resume every
// record arrives, in order, through the normal request path.
func TestPauseBytesWaitInKernel(t *testing.T) {
	const (
		frames   = 1024
		recs     = 16
		size     = 4096
		before   = 32 // whole requests sent before the pause
		minBlock = 8 << 20
	)
	env := newTestEnv(t, "")
	// The half request must stay in gnet's buffer: not streamed (invariant 26).
	env.e.tune.streamMin.Store(math.MaxInt64)
	addr := leaderOf0(t, env)
	r := dialRaw(t, addr, "acme-app", env.keys["acme-app"])
	defer r.c.Close()
	cl := clientOf(t, env.e, r)
	gauge := env.e.m.Connections()

	var written atomic.Int64
	half := make(chan int, 1)
	gate := make(chan struct{})
	wrote := make(chan error, 1)
	go func() { // the producer: one frame buffer, reused
		var buf []byte
		for i := 0; i < frames; i++ {
			buf = appendProduce(buf[:0], int32(i+1), i*recs, recs, size)
			b := buf
			if i == before {
				h := len(b) / 2
				if err := writeAll(r.c, b[:h], &written); err != nil {
					wrote <- err
					return
				}
				half <- h
				<-gate
				b = b[h:]
			}
			if err := writeAll(r.c, b, &written); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	answered := make(chan error, 1)
	go func() { answered <- readProduceAnswers(r.c, frames) }()

	// Pause once the gateway has read the half request (and answered the
	// whole ones: the pause waits for its writes to be flushed).
	h := <-half
	deadline := time.Now().Add(10 * time.Second)
	for {
		var in int
		onLoopOf(t, cl, func() { in = cl.c.Buffered() })
		if in == h {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway holds %d bytes, want the half request's %d", in, h)
		}
		time.Sleep(time.Millisecond)
	}
	p := pauseClient(t, cl)
	var stash int
	onLoopOf(t, cl, func() { stash = p.Stashed() })
	if stash != h {
		t.Fatalf("stash of %d bytes, want %d", stash, h)
	}
	heap0, rss0 := memNow(t)
	atPause := written.Load()
	close(gate)

	// Until the producer is blocked: nothing written for a second.
	last, since := written.Load(), time.Now()
	for time.Since(since) < time.Second {
		time.Sleep(50 * time.Millisecond)
		select {
		case err := <-wrote:
			t.Fatalf("the producer wrote everything while paused (%v): not blocked", err)
		default:
		}
		if n := written.Load(); n != last {
			last, since = n, time.Now()
		}
	}
	heap1, rss1 := memNow(t)
	whilePaused := last - atPause
	total := int64(len(appendProduce(nil, 1, 0, recs, size))) * frames
	t.Logf("while paused the peer wrote %.1f MiB of %.1f MiB, then blocked; heap in use %+.2f MiB, RSS %+.2f MiB",
		float64(whilePaused)/(1<<20), float64(total-atPause)/(1<<20), float64(heap1-heap0)/(1<<20), float64(rss1-rss0)/(1<<20))
	if whilePaused > total-atPause-minBlock {
		t.Fatalf("the peer wrote %d of %d bytes while paused", whilePaused, total-atPause)
	}
	if heap1-heap0 > 4<<20 || rss1-rss0 > 8<<20 {
		t.Fatalf("the gateway grew while paused: heap %+d, RSS %+d bytes", heap1-heap0, rss1-rss0)
	}
	onLoopOf(t, cl, func() { stash = p.Stashed() })
	if stash != h || !p.Paused() {
		t.Fatalf("read while paused: stash %d (want %d), paused %v", stash, h, p.Paused())
	}
	if g := env.e.m.Connections(); g != gauge {
		t.Fatalf("connections gauge %d, was %d", g, gauge)
	}
	noCloseLine(t, env)

	resumeClient(t, cl, p)
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(120 * time.Second):
		t.Fatal("the producer never finished after the resume")
	}
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	noCloseLine(t, env)

	// Every record, in order, on the broker.
	cons := env.directClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		env.phys("acme", "orders"): {0: kgo.NewOffset().AtStart()},
	}))
	next := 0
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for next < frames*recs {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records on the broker", next, frames*recs)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if want := fmt.Sprintf("%08d", next); len(rec.Value) != size || string(rec.Value[:8]) != want {
				t.Fatalf("record %d: %q", next, rec.Value[:8])
			}
			next++
		})
	}
}

func writeAll(c net.Conn, b []byte, n *atomic.Int64) error {
	for len(b) > 0 {
		_ = c.SetWriteDeadline(time.Now().Add(60 * time.Second))
		chunk := b[:min(len(b), 64<<10)]
		m, err := c.Write(chunk)
		n.Add(int64(m))
		if err != nil {
			return err
		}
		b = b[m:]
	}
	return nil
}

// sendApiVersions0 sends an ApiVersions v0 request.
func (r *rawConn) apiVersions() {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	r.send(req)
}

func (r *rawConn) apiVersionsAnswer() {
	r.t.Helper()
	resp := kmsg.ApiVersionsResponse{Version: 0}
	r.recv(&resp)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		r.t.Fatalf("ApiVersions answer: %+v", resp)
	}
}

// Issue 11.2: pause and resume 1000 times, each time with a request sent
// while paused and answered after the resume: no descriptor, no memory and
// no goroutine left behind; the connection was never counted as closed.
func TestPauseResumeThousandTimes(t *testing.T) {
	env := newTestEnv(t, "")
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	cl := clientOf(t, env.e, r)
	defer r.c.Close() // kept: its finalizer would close it
	gauge := env.e.m.Connections()
	fds := settledFds(t)
	heap0, _ := memNow(t)
	g0 := runtime.NumGoroutine()
	var p *conn.Conn
	for i := 0; i < 1000; i++ {
		if i == 0 {
			p = pauseClient(t, cl)
		} else {
			onLoopOf(t, cl, func() { cl.c.Pause(conn.Held) })
			waitState(t, cl, p, rpPaused)
		}
		r.apiVersions() // waits in the kernel
		resumeClient(t, cl, p)
		r.apiVersionsAnswer()
	}
	waitFds(t, fds, "after 1000 pauses")
	heap1, _ := memNow(t)
	if heap1-heap0 > 1<<20 {
		t.Fatalf("heap in use grew by %d bytes over 1000 pauses", heap1-heap0)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > g0+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > g0+2 {
		t.Fatalf("%d goroutines, %d before", g, g0)
	}
	if g := env.e.m.Connections(); g != gauge {
		t.Fatalf("connections gauge %d, was %d", g, gauge)
	}
	noCloseLine(t, env)
	t.Logf("heap in use %+d bytes after 1000 pauses", heap1-heap0)
}

// clientGone waits until the gateway released cl.
func clientGone(t *testing.T, cl *client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var closed bool
		onLoopOf(t, cl, func() { closed = cl.closed })
		if closed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the client was not released")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Issue 11.2: a peer that closes while paused is noticed, by the check
// the tick makes once a second or at the resume; the socket is closed
// once, the client released and counted once.
func TestPausedPeerCloses(t *testing.T) {
	env := newTestEnv(t, "")
	fds := settledFds(t)
	gauge := env.e.m.Connections()
	for _, atResume := range []bool{false, true} {
		r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
		cl := clientOf(t, env.e, r)
		p := pauseClient(t, cl)
		r.apiVersions()
		_ = r.c.Close()
		if atResume {
			onLoopOf(t, cl, resume(p))
		}
		clientGone(t, cl)
		var st pauseState
		onLoopOf(t, cl, func() { st = stateOf(p) })
		if st != rpClosed {
			t.Fatalf("pause state %d after the peer's close", st)
		}
		waitFds(t, fds, "after the peer's close")
		if g := env.e.m.Connections(); g != gauge {
			t.Fatalf("connections gauge %d, want %d", g, gauge)
		}
	}
}

// Issue 11.2: writes go on while a connection is paused. A Fetch the
// broker holds for its wait is answered while the client is paused: the
// answer reaches the client.
func TestPausedConnectionStillWritten(t *testing.T) {
	env := newTestEnv(t, "")
	r := dialRaw(t, leaderOf0(t, env), "acme-app", env.keys["acme-app"])
	defer r.c.Close()
	cl := clientOf(t, env.e, r)
	r.send(emptyFetch(800))
	deadline := time.Now().Add(10 * time.Second)
	for {
		var queued int
		onLoopOf(t, cl, func() { queued = cl.queue.Len() })
		if queued == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Fetch was not forwarded")
		}
		time.Sleep(time.Millisecond)
	}
	p := pauseClient(t, cl)
	resp := kmsg.FetchResponse{Version: 11}
	r.recv(&resp)
	if !p.Paused() {
		t.Fatal("resumed before the answer")
	}
	var st pauseState
	onLoopOf(t, cl, func() { st = stateOf(p) })
	if st != rpPaused {
		t.Fatalf("pause state %d while answered", st)
	}
	resumeClient(t, cl, p)
	r.apiVersions()
	r.apiVersionsAnswer()
}

func emptyFetch(waitMs int32) *kmsg.FetchRequest {
	f := kmsg.NewPtrFetchRequest()
	f.Version = 11
	f.MaxWaitMillis = waitMs
	f.MinBytes = 1
	f.MaxBytes = 1 << 20
	f.SessionEpoch = -1
	tp := kmsg.NewFetchRequestTopic()
	tp.Topic = "orders"
	pp := kmsg.NewFetchRequestTopicPartition()
	pp.FetchOffset = 0
	pp.PartitionMaxBytes = 1 << 20
	tp.Partitions = append(tp.Partitions, pp)
	f.Topics = append(f.Topics, tp)
	return f
}

// Issue 11.2: the broker side pauses too: its answer waits in the kernel
// until the resume, which enrolls it on its client's loop again
// (invariant 1).
func TestPauseBrokerConnection(t *testing.T) {
	env := newTestEnv(t, "")
	r := dialRaw(t, leaderOf0(t, env), "acme-app", env.keys["acme-app"])
	defer r.c.Close()
	cl := clientOf(t, env.e, r)
	r.apiVersions() // not forwarded: dial the broker with a Fetch first
	r.apiVersionsAnswer()
	r.send(emptyFetch(0))
	resp := kmsg.FetchResponse{Version: 11}
	r.recv(&resp)
	var p *conn.Conn
	onLoopOf(t, cl, func() {
		p = pauseUp(cl.up.conn) // under TLS, the socket below the TLS stand-in
	})
	waitState(t, cl, p, rpPaused)
	r.send(emptyFetch(0))
	// The broker answers at once; the answer stays in the gateway's kernel.
	_ = r.c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	var one [1]byte
	if _, err := r.c.Read(one[:]); err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("an answer crossed a paused broker connection (%v)", err)
	}
	onLoopOf(t, cl, resume(p))
	waitState(t, cl, p, rpAttached)
	r.recv(&resp)
	onLoopOf(t, cl, func() {
		if p.EventLoop() != cl.c.EventLoop() {
			t.Error("the broker connection came back on another loop")
		}
	})
}

// Issue 11.2: Engine.Stop closes the sockets of paused connections (the
// peer sees the close) and releases their clients.
func TestStopClosesPausedSockets(t *testing.T) {
	env := newTestEnv(t, "")
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	cl := clientOf(t, env.e, r)
	p := pauseClient(t, cl)
	var sock string
	onLoopOf(t, cl, func() { sock = openFds(t)[p.Fd()] })
	if !strings.HasPrefix(sock, "socket:") {
		t.Fatalf("the paused descriptor is %q", sock)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = env.e.Stop(ctx)
	for fd, l := range openFds(t) {
		if l == sock {
			t.Fatalf("the paused socket is still open (fd %d)", fd)
		}
	}
	r.expectClosed(5 * time.Second)
	if !cl.closed || stateOf(p) != rpClosed || !p.Closed() {
		t.Fatalf("not released: client closed %v, pause state %d", cl.closed, stateOf(p))
	}
	if g := env.e.m.Connections(); g != 0 {
		t.Fatalf("connections gauge %d after stop", g)
	}
}

// bigFetch asks orders/0 from offset 0 for up to 512 KiB (what the
// gateway reserves for its answer).
func bigFetch() *kmsg.FetchRequest {
	f := emptyFetch(0)
	f.MaxBytes = 512 << 10
	f.Topics[0].Partitions[0].PartitionMaxBytes = 512 << 10
	return f
}

// fetchedBytes is the size of the record batches of orders/0 in a Fetch answer.
func fetchedBytes(t *testing.T, resp *kmsg.FetchResponse) int {
	t.Helper()
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("Fetch answer: %+v", resp)
	}
	return len(resp.Topics[0].Partitions[0].RecordBatches)
}

// Issue 11.2: what the gateway wrote goes out, paused or not: a client's
// unsent answers are the stand-in's own queue (issue 11.3), not gnet's, so
// the pause does not wait for a flush; what it writes while paused goes
// out too, past the kernel's buffers (the drain watcher).
func TestPauseAndLargeAnswers(t *testing.T) {
	env := newTestEnv(t, "")
	fillOrders(t, env, 80) // 8 MiB on orders/0
	r := dialRaw(t, leaderOf0(t, env), "acme-app", env.keys["acme-app"])
	defer r.c.Close()
	cl := clientOf(t, env.e, r)

	// A: answers of megabytes the peer has not read: the pause is at once
	// (at the safe point after the call, not after a flush).
	const fetches = 16
	for i := 0; i < fetches; i++ {
		r.send(bigFetch())
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var out int
		onLoopOf(t, cl, func() { out = cl.c.Queued() })
		if out > 1<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no answer waits in the gateway")
		}
		time.Sleep(time.Millisecond)
	}
	var p *conn.Conn
	var st pauseState
	onLoopOf(t, cl, func() {
		cl.c.Pause(conn.Held)
		p = cl.c
		cl.lp.fc.Settle() // the safe point (the end of a callback)
		st = stateOf(p)
	})
	if st != rpPaused {
		t.Fatalf("pause state %d with unsent bytes, want paused", st)
	}
	var resp kmsg.FetchResponse
	n := 0
	for i := 0; i < fetches; i++ {
		resp = kmsg.FetchResponse{Version: 11}
		r.recv(&resp)
		if m := fetchedBytes(t, &resp); m == 0 || (n > 0 && m != n) {
			t.Fatalf("fetch %d: %d bytes (%d before)", i, m, n)
		} else {
			n = m
		}
	}
	waitState(t, cl, p, rpPaused)
	resumeClient(t, cl, p)
	clearOfRenewal(t, cl, r, 20*time.Second)

	// B: the same answer written to the paused client: the broker's side is
	// paused first, so the answer comes once the client is.
	var up *conn.Conn
	onLoopOf(t, cl, func() {
		up = pauseUp(cl.up.conn)
	})
	waitState(t, cl, up, rpPaused)
	for i := 0; i < fetches; i++ {
		r.send(bigFetch()) // forwarded to the paused broker socket: writes go on
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		var queued int
		onLoopOf(t, cl, func() { queued = cl.queue.Len() })
		if queued == fetches {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Fetch was not forwarded")
		}
		time.Sleep(time.Millisecond)
	}
	onLoopOf(t, cl, func() { cl.c.Pause(conn.Held) })
	waitState(t, cl, p, rpPaused)
	onLoopOf(t, cl, resume(up))
	deadline = time.Now().Add(10 * time.Second)
	for {
		var out int
		onLoopOf(t, cl, func() { out = p.Queued() })
		if out > 1<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the answer did not wait for the paused socket")
		}
		time.Sleep(time.Millisecond)
	}
	for i := 0; i < fetches; i++ {
		resp = kmsg.FetchResponse{Version: 11}
		r.recv(&resp)
		if m := fetchedBytes(t, &resp); m != n {
			t.Fatalf("fetch %d: %d bytes while paused, %d before", i, m, n)
		}
	}
	onLoopOf(t, cl, func() { st = stateOf(p) })
	if st != rpPaused {
		t.Fatalf("pause state %d after the answer", st)
	}
	resumeClient(t, cl, p)
	r.apiVersions()
	r.apiVersionsAnswer()
}

// Issue 11.2: a connection paused inside its own OnTraffic (as a budget
// will): gnet's read of that event is kept (the stash), the frames it held
// are still the owner's to handle, and nothing more is read until the resume.
func TestPauseInsideOwnTraffic(t *testing.T) {
	var arm atomic.Pointer[client]
	t.Cleanup(func() { testHookTraffic = nil }) // after the env stopped
	testHookTraffic = func(cl *client) {
		if arm.CompareAndSwap(cl, nil) {
			cl.c.Pause(conn.Held)
		}
	}
	env := newTestEnv(t, "")
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	defer r.c.Close()
	cl := clientOf(t, env.e, r)
	arm.Store(cl)
	r.apiVersions() // read by gnet, paused at once, then handled from the stash
	r.apiVersionsAnswer()
	var p *conn.Conn
	onLoopOf(t, cl, func() { p = cl.c })
	if p == nil {
		t.Fatal("not paused")
	}
	waitState(t, cl, p, rpPaused)
	r.apiVersions() // waits in the kernel
	_ = r.c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var one [1]byte
	if _, err := r.c.Read(one[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("answered while paused (%v)", err)
	}
	resumeClient(t, cl, p)
	r.apiVersionsAnswer()
}

// Issue 11.2: a TLS client pauses too: the record layer reads through the
// stand-in (the adapter's handle is replaced), what gnet had read of a
// record waits in the stash. A produce blocks while its connections are
// paused and completes after the resume.
func TestPauseTLSClient(t *testing.T) {
	te := newTLSEnv(t, "")
	// Every record to orders/0: no new connection after the first ones.
	cl := te.saslClient("acme-app", tls.VersionTLS13, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceN(t, cl, "orders", 2, "before")
	var paused []*conn.Conn
	var owners []*client
	var mu sync.Mutex
	onLoops(t, te.e, func(l *loop) {
		for c := range l.clients {
			if c.auth.tls == nil || c.auth.state != stAuthed {
				continue
			}
			if p := pauseCl(c); p != nil {
				mu.Lock()
				paused, owners = append(paused, p), append(owners, c)
				mu.Unlock()
			}
		}
	})
	if len(paused) == 0 {
		t.Fatal("no TLS connection to pause")
	}
	for i, p := range paused {
		waitState(t, owners[i], p, rpPaused)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done <- cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("while paused")}).FirstErr()
	}()
	select {
	case err := <-done:
		t.Fatalf("produced while every connection was paused (%v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	for i, p := range paused {
		onLoopOf(t, owners[i], resume(p))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	produceN(t, cl, "orders", 2, "after")
}

// clearOfRenewal keeps a KIP-368 renewal of the client's broker session
// (the SASL_SSL test broker's sessions last 30 s) out of the next d: a
// test that pauses the broker connection's reads by hand would hold the
// renewal's answers, and the client's requests wait for the renewal. With
// one due within d, it waits for its time and has one request forwarded
// past it, which renews the session first.
func clearOfRenewal(t *testing.T, cl *client, r *rawConn, d time.Duration) {
	t.Helper()
	var by time.Time
	onLoopOf(t, cl, func() {
		if cl.up.conn != nil && cl.up.conn.sec != nil {
			by = cl.up.conn.sec.renewBy
		}
	})
	if by.IsZero() || time.Until(by) > d {
		return
	}
	time.Sleep(time.Until(by) + 50*time.Millisecond)
	r.send(bigFetch())
	resp := kmsg.FetchResponse{Version: 11}
	r.recv(&resp)
	var after time.Time
	onLoopOf(t, cl, func() { after = cl.up.conn.sec.renewBy })
	if !after.After(by) {
		t.Fatalf("the broker session was not renewed (renew by %v, then %v)", by, after)
	}
}
