package engine

// Helpers of the pause tests (issue 11.2), several shared with the flow,
// splice and upstream TLS tests: a function run on a client's loop, a
// connection paused and resumed and its state waited for, the process's
// descriptors and memory counted, and raw requests (Produce, ApiVersions,
// Fetch) on a raw connection.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/engine/session"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/engine/conn"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// onLoopOf runs fn on cl's loop and waits for it.
func onLoopOf(t *testing.T, cl *session.Client, fn func()) {
	t.Helper()
	done := make(chan struct{})
	// Run ends at a safe point: the pauses fn asked are applied.
	if err := cl.Loop().Run("test", func() {
		defer close(done)
		fn()
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not run the function")
	}
}

// clientOf finds the gateway's client of the raw connection r.
func clientOf(t *testing.T, e *Engine, r *rawConn) *session.Client {
	t.Helper()
	want := r.c.LocalAddr().String()
	var found atomic.Pointer[session.Client]
	onLoops(t, e, func(l *session.Loop) {
		for cl := range l.Clients() {
			if a := cl.Conn().RemoteAddr(); a != nil && a.String() == want {
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
func pauseClient(t *testing.T, cl *session.Client) *conn.Conn {
	t.Helper()
	onLoopOf(t, cl, func() { cl.Conn().Pause(conn.Held) })
	waitState(t, cl, cl.Conn(), rpPaused)
	return cl.Conn()
}

// pauseUp pauses the reads of cl's broker connection (the bare reason);
// nil when it has none open.
func pauseUp(cl *session.Client) *conn.Conn {
	u := cl.State().Broker
	if u != nil {
		u.Pause(conn.Held)
	}
	return u
}

// pauseCl pauses a client's reads (the bare reason); nil when it cannot
// be paused now (closed, or in its TLS handshake).
func pauseCl(cl *session.Client) *conn.Conn {
	if st := cl.State(); st.Gone || st.TLS && cl.Conn() == nil {
		return nil
	}
	cl.Conn().Pause(conn.Held)
	return cl.Conn()
}

// resume returns the function that drops the bare reason of c.
func resume(c *conn.Conn) func() { return func() { c.Resume(conn.Held) } }

func waitState(t *testing.T, cl *session.Client, p *conn.Conn, want pauseState) {
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

func resumeClient(t *testing.T, cl *session.Client, p *conn.Conn) {
	t.Helper()
	onLoopOf(t, cl, resume(p))
	waitState(t, cl, p, rpAttached)
}

// clientGone waits until the gateway released cl.
func clientGone(t *testing.T, cl *session.Client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var closed bool
		onLoopOf(t, cl, func() { closed = cl.State().Gone })
		if closed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the client was not released")
		}
		time.Sleep(10 * time.Millisecond)
	}
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

// noCloseLine fails if the gateway logged a close since the log channel
// was last read.
func noCloseLine(t *testing.T, env *testEnv) {
	t.Helper()
	noLogLine(t, env, "closed", "a close was logged")
}

// noLogLine fails (what) if the gateway logged a line containing part
// since the log channel was last read.
func noLogLine(t *testing.T, env *testEnv, part, what string) {
	t.Helper()
	for {
		select {
		case line := <-env.logs.ch:
			if strings.Contains(line, part) {
				t.Fatalf("%s: %s", what, line)
			}
		default:
			return
		}
	}
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

// rawProducer writes frames Produce requests on a connection (appendProduce's:
// each of recs records of size bytes, numbered from 0 across them), their
// correlation ids from corr, one frame buffer reused. The request at index
// halveAt (none when negative) goes in two halves: the first is written
// and its size sent on half, the second once gate is closed. written
// counts the bytes written; wrote gets the end of the writing, nil once
// every request is written.
type rawProducer struct {
	written atomic.Int64
	half    chan int
	gate    chan struct{}
	wrote   chan error
}

// startRawProducer starts a rawProducer on c.
func startRawProducer(c net.Conn, corr int32, frames, recs, size, halveAt int) *rawProducer {
	pr := &rawProducer{half: make(chan int, 1), gate: make(chan struct{}), wrote: make(chan error, 1)}
	go func() {
		var buf []byte
		for i := 0; i < frames; i++ {
			buf = appendProduce(buf[:0], corr+int32(i), i*recs, recs, size)
			b := buf
			if i == halveAt {
				h := len(b) / 2
				if err := writeAll(c, b[:h], &pr.written); err != nil {
					pr.wrote <- err
					return
				}
				pr.half <- h
				<-pr.gate
				b = b[h:]
			}
			if err := writeAll(c, b, &pr.written); err != nil {
				pr.wrote <- err
				return
			}
		}
		pr.wrote <- nil
	}()
	return pr
}

// blocked waits until the producer is blocked: nothing written for a
// second, and the writing not ended (else it fails saying what, with the
// end). It returns the bytes written by then.
func (pr *rawProducer) blocked(t *testing.T, what string) int64 {
	t.Helper()
	last, since := pr.written.Load(), time.Now()
	for time.Since(since) < time.Second {
		time.Sleep(50 * time.Millisecond)
		select {
		case err := <-pr.wrote:
			t.Fatalf("%s (%v): not blocked", what, err)
		default:
		}
		if n := pr.written.Load(); n != last {
			last, since = n, time.Now()
		}
	}
	return last
}

// writeAll writes b on c in writes of up to 64 KiB, each counted in n.
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

// readFrame reads one answer's frame on c (60 s at the most), its size
// prefix dropped, into buf when it fits.
func readFrame(c net.Conn, buf []byte) ([]byte, error) {
	var sz [4]byte
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	if _, err := io.ReadFull(c, sz[:]); err != nil {
		return nil, err
	}
	size := int(binary.BigEndian.Uint32(sz[:]))
	if cap(buf) < size {
		buf = make([]byte, size)
	}
	b := buf[:size]
	if _, err := io.ReadFull(c, b); err != nil {
		return nil, err
	}
	return b, nil
}

// readProduceAnswers reads n Produce answers (v8) on c, in order of
// correlation id from first, each without error.
func readProduceAnswers(c net.Conn, first int32, n int) error {
	buf := make([]byte, 0, 1024)
	for i := 1; i <= n; i++ {
		b, err := readFrame(c, buf)
		if err != nil {
			return fmt.Errorf("answer %d: %w", i, err)
		}
		buf = b[:0]
		corr, body, err := codec.ParseResponseHeader(b, 0, 8)
		if err != nil {
			return err
		}
		if want := first + int32(i-1); corr != want {
			return fmt.Errorf("answer %d has correlation id %d, want %d", i, corr, want)
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

// answerWaitsWhilePaused: with cl's broker connection p paused, a Fetch
// from r is answered by the broker at once and the answer stays in the
// gateway's kernel; resumed, it arrives (resp).
func answerWaitsWhilePaused(t *testing.T, r *rawConn, cl *session.Client, p *conn.Conn, resp *kmsg.FetchResponse) {
	t.Helper()
	waitState(t, cl, p, rpPaused)
	r.send(emptyFetch(0))
	_ = r.c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	var one [1]byte
	if _, err := r.c.Read(one[:]); err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("an answer crossed a paused broker connection (%v)", err)
	}
	onLoopOf(t, cl, resume(p))
	waitState(t, cl, p, rpAttached)
	r.recv(resp)
}
