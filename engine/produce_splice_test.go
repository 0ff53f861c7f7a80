package engine

// Issue 11.4, the Produce records spliced on the loop (produce_splice.go):
// what waits in the client's socket goes to the broker's without entering
// the process, and the broker receives the same bytes.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceFrameV is a Produce of records to topic/0 at version v, its frame
// with its size prefix.
func produceFrameV(r *rawConn, v int16, topic string, acks int16, records []byte) []byte {
	return produceRequestFrame(r, v, acks, topic, records)
}

// produceRequestFrame is a Produce at version v of one topic, a partition
// for each of records (0, 1, ...), its frame with its size prefix.
func produceRequestFrame(r *rawConn, v, acks int16, topic string, records ...[]byte) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = v, acks, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for p, recs := range records {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = int32(p), recs
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	r.corr++
	b := []byte{0, 0, 0, 0}
	b = codec.AppendRequestHeader(b, req.Key(), req.GetVersion(), r.corr, []byte("raw"), false, req.IsFlexible())
	b = req.AppendTo(b)
	codec.PutSize(b, len(b)-4)
	return b
}

// bulkConn is leaderConn with a socket that takes a whole large request
// at once (8 MiB).
func bulkConn(t *testing.T, env *testEnv) *rawConn {
	r := leaderConn(t, env)
	_ = r.c.(*net.TCPConn).SetWriteBuffer(8 << 20)
	return r
}

// recordBatch is a record batch of n records of 256 KiB (recordValue from
// first on), the records appended to vals.
func recordBatch(vals *[][]byte, first, n int) []byte {
	var batch [][]byte
	for j := 0; j < n; j++ {
		v := recordValue(first+j, 256<<10)
		batch = append(batch, v)
		*vals = append(*vals, v)
	}
	return batchOf(batch...)
}

// produceAnswered reads the answer to the i-th v9 Produce of one
// partition sent on r, and fails unless it is a success.
func produceAnswered(t *testing.T, r *rawConn, i int) {
	t.Helper()
	resp := kmsg.ProduceResponse{Version: 9}
	r.recv(&resp)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("answer %d: %+v", i, resp.Topics)
	}
}

// kfakeEnv is a test env on a kfake cluster of its own, one broker and
// acme.orders of parts partitions, its batches up to 10 MiB; its broker's
// connections stop reading while the returned listener is stalled.
func kfakeEnv(t *testing.T, parts int32) (*testEnv, *stallListener) {
	t.Helper()
	var sl *stallListener
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, "acme.orders"),
		kfake.ListenFn(func(network, addr string) (net.Listener, error) {
			l, err := stallingListen(network, addr)
			sl = l
			return l, err
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	env := newTestEnvWith(t, envConfig{upstream: fmt.Sprintf("    brokers: [%q]\n", k.ListenAddrs()[0])})
	env.direct = k.ListenAddrs()
	bigBatches(t, env)
	return env, sl
}

// A client writes large Produce requests whole (one partition of 4 MiB of
// records each, at a version whose records end the frame and at one where
// tags follow): most of their records are spliced, the answers are the
// broker's, and every record is on the broker intact and in order. With
// splicing off, nothing is spliced (the counter is the gateway's).
func TestSpliceProduceRecords(t *testing.T) {
	skipOnRealKafka(t)
	env := newTestEnv(t, "")
	bigBatches(t, env)
	r := bulkConn(t, env)

	var vals [][]byte
	send := func(v int16, first int) int64 {
		t.Helper()
		frame := produceFrameV(r, v, "orders", -1, recordBatch(&vals, first, 16))
		before := env.e.env.Series.ProduceSpliced.Load()
		_ = r.c.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := r.c.Write(frame); err != nil {
			t.Fatal(err)
		}
		resp := kmsg.ProduceResponse{Version: v}
		r.recv(&resp)
		if len(resp.Topics) != 1 || resp.Topics[0].Topic != "orders" || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("v%d: answer %+v", v, resp.Topics)
		}
		return env.e.env.Series.ProduceSpliced.Load() - before
	}
	// How much of a request waits in the socket when the loop comes is the
	// machine's timing (a slow writer's bytes may all be read by gnet as
	// they come): requests go on until four of them, two at each version,
	// had 1 MiB spliced or more, a bounded number.
	good, i := map[int16]int{}, 0
	for ; i < 16 && (good[8] < 2 || good[9] < 2); i++ {
		v := int16(8 + i%2)
		got := send(v, i*16)
		t.Logf("v%d request %d: %d of 4 MiB spliced", v, i, got)
		if got >= 1<<20 {
			good[v]++
		}
	}
	if good[8] < 2 || good[9] < 2 {
		t.Fatalf("of %d requests of 4 MiB, %d at v8 and %d at v9 had 1 MiB spliced or more, want 2 each", i, good[8], good[9])
	}
	old := env.e.env.Tune.ProduceSpliceMin.Swap(0)
	t.Cleanup(func() { env.e.env.Tune.ProduceSpliceMin.Store(old) })
	if got := send(9, i*16); got != 0 {
		t.Fatalf("splicing off: %d bytes spliced", got)
	}
	consumeValues(t, env, vals)
}

// A broker that stops reading while records are spliced to it: the
// producer is paused (flow.go) with the rest in the kernel, whichever
// path met the full socket, and once the broker reads again every record
// arrives intact and in order. With testPipeShort, every pass meets a
// "full" socket: half of the pipe is read out and written to the broker
// connection behind the spliced half, and the records are intact too.
func TestSpliceProduceBrokerFull(t *testing.T) {
	env, r, sl := producerOnStalling(t)

	var vals [][]byte
	frames := func(n int) [][]byte { return bigFrames(r, &vals, n) }
	answer := func(i int) { t.Helper(); produceAnswered(t, r, i) }
	write := func(fs [][]byte, written *atomic.Int64) chan error {
		werr := make(chan error, 1)
		go func() {
			_ = r.c.SetWriteDeadline(time.Now().Add(60 * time.Second))
			for _, f := range fs {
				if _, err := r.c.Write(f); err != nil {
					werr <- err
					return
				}
				written.Add(int64(len(f)))
			}
			werr <- nil
		}()
		return werr
	}

	// Half of every pass read out of the pipe.
	env.e.env.Tune.PipeShort.Store(true)
	outs, spliced := env.e.env.Series.ProducePipeOuts.Load(), env.e.env.Series.ProduceSpliced.Load()
	var written atomic.Int64
	fs := frames(4)
	werr := write(fs, &written)
	for i := range fs {
		answer(i)
	}
	env.e.env.Tune.PipeShort.Store(false)
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if env.e.env.Series.ProducePipeOuts.Load() == outs || env.e.env.Series.ProduceSpliced.Load() == spliced {
		t.Fatalf("%d passes read out, %d bytes spliced", env.e.env.Series.ProducePipeOuts.Load()-outs, env.e.env.Series.ProduceSpliced.Load()-spliced)
	}

	// A broker that reads nothing.
	sl.stall(true)
	spliced = env.e.env.Series.ProduceSpliced.Load()
	written.Store(0)
	fs = frames(24)
	werr = write(fs, &written)
	total := int64(0)
	for _, f := range fs {
		total += int64(len(f))
	}
	for last, stable := int64(-1), 0; stable < 30; time.Sleep(10 * time.Millisecond) {
		if w := written.Load(); w != last {
			last, stable = w, 0
		} else {
			stable++
		}
	}
	if w := written.Load(); w >= total {
		t.Fatalf("the producer wrote all its %d bytes while the broker read nothing", w)
	}
	sl.stall(false)
	for i := range fs {
		answer(i)
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if env.e.env.Series.ProduceSpliced.Load()-spliced < 8<<20 {
		t.Fatalf("%d bytes spliced of %d", env.e.env.Series.ProduceSpliced.Load()-spliced, total)
	}
	consumeValues(t, env, vals)
}

// Requests of two partitions (one broker leads both): the header between
// the two partitions' records is taken from the socket, and the second
// partition's records are spliced too; each partition holds its records,
// intact and in order.
func TestSpliceProduceSeveralPartitions(t *testing.T) {
	skipOnRealKafka(t)
	env, _ := kfakeEnv(t, 2)
	r := bulkConn(t, env)

	var vals [2][][]byte // by partition
	units := env.e.env.Series.ProduceUnits.Load()
	for i, v := range []int16{9, 8, 9, 8} {
		var recs [][]byte
		for p := range vals {
			recs = append(recs, recordBatch(&vals[p], i*100+p*10, 8)) // 2 MiB
		}
		b := produceRequestFrame(r, v, -1, "orders", recs...)
		spliced := env.e.env.Series.ProduceSpliced.Load()
		_ = r.c.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := r.c.Write(b); err != nil {
			t.Fatal(err)
		}
		resp := kmsg.ProduceResponse{Version: v}
		r.recv(&resp)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d: answer %+v", v, resp.Topics)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("v%d partition %d: error %d", v, p.Partition, p.ErrorCode)
			}
		}
		t.Logf("v%d: %d of 4 MiB spliced", v, env.e.env.Series.ProduceSpliced.Load()-spliced)
	}
	if env.e.env.Series.ProduceUnits.Load() == units {
		t.Fatal("no partition header was taken from the socket between two partitions' records")
	}
	cons := env.client("acme-app", kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().At(0), 1: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxBytes(10<<20), kgo.FetchMaxPartitionBytes(10<<20))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[int32]int{}
	for got[0] < len(vals[0]) || got[1] < len(vals[1]) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("records read after 30 s: %v", got)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(rec *kgo.Record) {
			i := got[rec.Partition]
			if i >= len(vals[rec.Partition]) || !bytes.Equal(rec.Value, vals[rec.Partition][i]) {
				t.Fatalf("partition %d record %d: not the record written", rec.Partition, i)
			}
			got[rec.Partition]++
		})
	}
}

// Requests written back to back, large and small, with the broker
// stalled for a while: the producer is held for its broker with requests
// waiting in its socket, and the heads of the large ones that follow a
// spliced one are taken from the socket (spliceNext: gnet never reads
// their first bytes), whether the client's own event or its resume meets
// them; the small ones go through the loop's buffer. Every answer comes,
// in order, and every record is on the broker intact and in order.
func TestSpliceProduceNextFromSocket(t *testing.T) {
	env, r, sl := producerOnStalling(t)

	var vals [][]byte
	var frames [][]byte
	for i := 0; i < 12; i++ {
		n := 12 // 3 MiB
		if i%4 == 3 {
			n = 0 // small: one record of 2 KiB
		}
		var recs []byte
		if n == 0 {
			v := recordValue(len(vals), 2<<10)
			vals = append(vals, v)
			recs = batchOf(v)
		} else {
			recs = recordBatch(&vals, len(vals), n)
		}
		frames = append(frames, produceFrameV(r, 9, "orders", -1, recs))
	}
	nexts, spliced := env.e.env.Series.ProduceNexts.Load(), env.e.env.Series.ProduceSpliced.Load()
	// The producer held, requests waiting in its socket.
	writeWhileStalled(t, r, sl, frames, 300*time.Millisecond)
	t.Logf("%d requests begun from the socket, %d MiB spliced", env.e.env.Series.ProduceNexts.Load()-nexts, (env.e.env.Series.ProduceSpliced.Load()-spliced)>>20)
	if env.e.env.Series.ProduceNexts.Load() == nexts {
		t.Fatal("no request was begun from its head in the socket")
	}
	consumeValues(t, env, vals)
}

// Invariant 42: a pass splices no more than the broker's socket takes. A
// broker that reads nothing for a while, a producer writing 72 MiB: the
// passes end before a full broker socket (roomOut) and nothing is left in
// the pipe to be read out; the producer is held with the rest in its own
// socket, detached once it fills it, and once the broker reads again the
// rest is spliced from the detached socket before it is enrolled again.
// Every answer comes and every record is on the broker intact and in
// order. With the bound off, the same run reads passes out of the pipe.
func TestSpliceProduceRoomBound(t *testing.T) {
	env, r, sl := producerOnStalling(t)

	var vals [][]byte
	run := func(n int) (outs, rooms, detached int64) {
		t.Helper()
		fs := bigFrames(r, &vals, n)
		outs0, rooms0, det0 := env.e.env.Series.ProducePipeOuts.Load(), env.e.env.Series.ProduceRoomOuts.Load(), env.e.env.Series.ProduceDetached.Load()
		// The broker's socket full, the producer held.
		writeWhileStalled(t, r, sl, fs, 500*time.Millisecond)
		return env.e.env.Series.ProducePipeOuts.Load() - outs0, env.e.env.Series.ProduceRoomOuts.Load() - rooms0, env.e.env.Series.ProduceDetached.Load() - det0
	}

	outs, rooms, detached := run(24)
	t.Logf("bounded: %d passes read out of the pipe, %d ended before a full socket, %d MiB spliced from a detached socket", outs, rooms, detached>>20)
	if rooms == 0 || outs > rooms/4 {
		t.Fatalf("bounded: %d passes read out of the pipe, %d ended before a full broker socket", outs, rooms)
	}
	if detached < 1<<20 {
		t.Fatalf("bounded: %d bytes spliced from the detached socket", detached)
	}

	env.e.env.Tune.RoomBound.Store(false)
	t.Cleanup(func() { env.e.env.Tune.RoomBound.Store(true) })
	outs, rooms, _ = run(24)
	t.Logf("unbounded: %d passes read out of the pipe, %d ended before a full socket", outs, rooms)
	if outs == 0 || rooms != 0 {
		t.Fatalf("unbounded: %d passes read out of the pipe, %d ended before a full broker socket", outs, rooms)
	}
	consumeValues(t, env, vals)
}

// writeWhileStalled writes frames back to back on r while the broker reads
// nothing for d at least, and until the writer is blocked (the producer
// held, the rest in its socket) or done: a busy machine's slow writer
// still fills the sockets before the broker reads again. Then it reads the
// answer to each (all must succeed) and waits for the writer.
func writeWhileStalled(t *testing.T, r *rawConn, sl *stallListener, frames [][]byte, d time.Duration) {
	t.Helper()
	sl.stall(true)
	werr := make(chan error, 1)
	var written atomic.Int64
	go func() {
		_ = r.c.SetWriteDeadline(time.Now().Add(60 * time.Second))
		// Back to back, in 64 KiB writes: the progress is seen.
		for b := bytes.Join(frames, nil); len(b) > 0; {
			n, err := r.c.Write(b[:min(len(b), 64<<10)])
			written.Add(int64(n))
			if err != nil {
				werr <- err
				return
			}
			b = b[n:]
		}
		werr <- nil
	}()
	time.Sleep(d)
	deadline := time.Now().Add(30 * time.Second)
	for last, stable := int64(-1), 0; stable < 10 && len(werr) == 0; time.Sleep(20 * time.Millisecond) {
		if w := written.Load(); w != last {
			last, stable = w, 0
		} else {
			stable++
		}
		if time.Now().After(deadline) {
			t.Fatal("the producer kept writing for 30 s to a broker that reads nothing")
		}
	}
	sl.stall(false)
	for i := range frames {
		produceAnswered(t, r, i)
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
}

// bigFrames is n v9 Produce frames of one partition, 3 MiB of records each
// (their values appended to vals).
func bigFrames(r *rawConn, vals *[][]byte, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = produceFrameV(r, 9, "orders", -1, recordBatch(vals, len(*vals), 12))
	}
	return out
}

// producerOnStalling is a client connection (bulkConn) to a kfake broker of
// its own whose connections stop reading while the listener is stalled
// (kfakeEnv, one partition); the test is kfake's only.
func producerOnStalling(t *testing.T) (*testEnv, *rawConn, *stallListener) {
	t.Helper()
	skipOnRealKafka(t)
	env, sl := kfakeEnv(t, 1)
	return env, bulkConn(t, env), sl
}
