package engine

// Issue 11.1, cut-through, the request side: a Produce larger than what
// one read brings is relayed to the broker as it arrives
// (client.beginProduce, feedProduce), never gathered whole.

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/engine/session"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// watchClients records the most a client connection of env held at a
// traffic event (session.Hooks).
func watchClients(t *testing.T, env *testEnv) *atomic.Int64 {
	var most atomic.Int64
	hook := func(cl *session.Client) {
		n := int64(cl.Conn().Buffered())
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				return
			}
		}
	}
	env.e.env.Hooks.Traffic.Store(&hook)
	return &most
}

// bigBatches lets acme's orders take record batches of 10 MiB (kfake's
// default is Kafka's, 1 MiB).
func bigBatches(t *testing.T, env *testEnv) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(env.directClient())
	v := "10485760"
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: &v}}, env.phys("acme", "orders"))
	if err == nil {
		for _, r := range rs {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// produceLarge writes n records of size bytes (recordValue) to orders/0
// through the gateway in batches of up to 8 MiB.
func produceLarge(t *testing.T, env *testEnv, n, size int) {
	t.Helper()
	produceLargeWith(t, env.client("acme-app", largeProducer...), n, size)
}

var largeProducer = []kgo.Opt{kgo.ProducerBatchMaxBytes(8 << 20), kgo.ProducerLinger(100 * time.Millisecond),
	kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProduceRequestTimeout(30 * time.Second)}

func produceLargeWith(t *testing.T, prod *kgo.Client, n, size int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		prod.Produce(ctx, &kgo.Record{Topic: "orders", Partition: 0, Value: recordValue(i, size)}, func(_ *kgo.Record, err error) { errs <- err })
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
}

// (a) A franz-go producer with batches of up to 8 MiB: every record
// arrives intact, and the client connection never holds more than a few
// reads' worth. The same producer with streaming off shows what the
// gateway held before (the whole request), so the requests are indeed
// that large.
func TestStreamLargeProduceNeverHeldWhole(t *testing.T) {
	skipOnRealKafka(t)
	env := newTestEnv(t, "")
	most := watchClients(t, env)
	bigBatches(t, env)
	const n, size = 64, 256 << 10

	old := env.e.env.Tune.StreamMin.Swap(math.MaxInt64)
	produceLarge(t, env, n/2, size)
	whole := most.Load()
	env.e.env.Tune.StreamMin.Store(old)

	most.Store(0)
	produceLarge(t, env, n/2, size)
	streamed := most.Load()

	// The records of both runs, in order: produceLarge wrote i < n/2 twice.
	checkLarge(t, env.client("acme-app", largeConsumer...), n, size)
	t.Logf("largest client-side buffer: %d KiB streamed, %d KiB gathered whole", streamed>>10, whole>>10)
	if whole < 2<<20 {
		t.Fatalf("gathered whole, the client connection held at most %d bytes: the requests are not the several MiB the test needs", whole)
	}
	if streamed > 1<<20 {
		t.Fatalf("streamed, the client connection held %d bytes (requests of %d)", streamed, whole)
	}
}

var largeConsumer = []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().At(0)}}),
	kgo.FetchMaxBytes(10 << 20), kgo.FetchMaxPartitionBytes(10 << 20)}

// checkLarge reads n records of orders/0 from its start and checks that
// record i is recordValue(i mod n/2, size), intact and in order.
func checkLarge(t *testing.T, cons *kgo.Client, n, size int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for got := 0; got < n; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records after 60 s", got, n)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(got) || !bytes.Equal(r.Value, recordValue(got%(n/2), size)) {
				t.Fatalf("record at offset %d (want %d): %d bytes, not the record written", r.Offset, got, len(r.Value))
			}
			got++
		})
	}
}

// Over TLS (the decrypted buffer, the dial's pause through the TLS
// adapter): the large requests arrive intact.
func TestStreamLargeProduceTLS(t *testing.T) {
	skipOnRealKafka(t)
	te := newTLSEnv(t, "")
	bigBatches(t, te.testEnv)
	const n, size = 32, 256 << 10
	produceLargeWith(t, te.saslClient("acme-app", tls.VersionTLS13, largeProducer...), n/2, size)
	produceLargeWith(t, te.saslClient("acme-app", tls.VersionTLS12, largeProducer...), n/2, size)
	checkLarge(t, te.saslClient("acme-app", tls.VersionTLS13, largeConsumer...), n, size)
}

// leaderConn connects to orders/0's leader through the gateway as acme-app.
func leaderConn(t *testing.T, env *testEnv) *rawConn {
	r := dialRaw(t, leaderOf0(t, env), "acme-app", env.keys["acme-app"])
	_ = r.c.(*net.TCPConn).SetReadBuffer(1 << 20)
	return r
}

// rawProduceFrame is a Produce of records to topic/0 at version 9, its
// frame with its size prefix.
func rawProduceFrame(r *rawConn, topic string, acks int16, records []byte) []byte {
	return produceFrameV(r, 9, topic, acks, records)
}

// batchOf encodes values as one record batch (no compression), as a
// client sends it (the broker checks its CRC).
func batchOf(values ...[]byte) []byte {
	now := time.Now().UnixMilli()
	var dst []byte
	dst = kbin.AppendInt64(dst, 0)  // first offset
	dst = kbin.AppendInt32(dst, 0)  // length, patched
	dst = kbin.AppendInt32(dst, -1) // partition leader epoch
	dst = kbin.AppendInt8(dst, 2)   // magic
	dst = kbin.AppendInt32(dst, 0)  // CRC, patched
	dst = kbin.AppendInt16(dst, 0)  // attributes
	dst = kbin.AppendInt32(dst, int32(len(values)-1))
	dst = kbin.AppendInt64(dst, now)
	dst = kbin.AppendInt64(dst, now)
	dst = kbin.AppendInt64(dst, -1) // producer id
	dst = kbin.AppendInt16(dst, -1)
	dst = kbin.AppendInt32(dst, -1)
	dst = kbin.AppendInt32(dst, int32(len(values)))
	for i, v := range values {
		bodyLen := 1 + 1 + kbin.VarintLen(int32(i)) + 1 + kbin.VarintLen(int32(len(v))) + len(v) + 1
		dst = kbin.AppendVarint(dst, int32(bodyLen))
		dst = append(dst, 0)                   // attributes
		dst = kbin.AppendVarlong(dst, 0)       // timestamp delta
		dst = kbin.AppendVarint(dst, int32(i)) // offset delta
		dst = kbin.AppendVarint(dst, -1)       // key: null
		dst = kbin.AppendVarint(dst, int32(len(v)))
		dst = append(dst, v...)
		dst = kbin.AppendVarint(dst, 0) // headers
	}
	binary.BigEndian.PutUint32(dst[8:], uint32(len(dst)-12))
	binary.BigEndian.PutUint32(dst[17:], crc32.Checksum(dst[21:], crc32.MakeTable(crc32.Castagnoli)))
	return dst
}

// (b) A client writing a large Produce one byte at a time: relayed as it
// comes, answered, its records intact.
func TestStreamProduceOneByteAtATime(t *testing.T) {
	skipOnRealKafka(t)
	env := newTestEnv(t, "")
	most := watchClients(t, env)
	r := leaderConn(t, env)
	vals := [][]byte{recordValue(0, 100<<10), recordValue(1, 100<<10)}
	frame := rawProduceFrame(r, "orders", -1, batchOf(vals...))
	_ = r.c.SetWriteDeadline(time.Now().Add(60 * time.Second))
	for i := range frame {
		if _, err := r.c.Write(frame[i : i+1]); err != nil {
			t.Fatalf("write at %d of %d: %v", i, len(frame), err)
		}
	}
	resp := kmsg.ProduceResponse{Version: 9}
	r.recv(&resp)
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != "orders" || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("answer %+v", resp.Topics)
	}
	consumeValues(t, env, vals)
	if m := most.Load(); m > 64<<10 {
		t.Fatalf("the client connection held %d bytes", m)
	}
}

// consumeValues reads orders/0 from its start through the gateway and
// checks it holds exactly vals, intact.
func consumeValues(t *testing.T, env *testEnv, vals [][]byte) {
	t.Helper()
	cons := env.client("acme-app", kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().At(0)}}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for got := 0; got < len(vals); {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records after 30 s", got, len(vals))
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(rec *kgo.Record) {
			if got >= len(vals) || !bytes.Equal(rec.Value, vals[got]) {
				t.Fatalf("record %d: %d bytes, not the record written", got, len(rec.Value))
			}
			got++
		})
	}
}

// (c) A large Produce to a topic the key may not send to is not streamed:
// gathered whole, it is answered TOPIC_AUTHORIZATION_FAILED as before,
// and nothing reaches the broker; with acks=0 it is dropped, and the
// connection goes on.
func TestStreamProduceRefusedTopic(t *testing.T) {
	skipOnRealKafka(t)
	env := newTestEnv(t, "")
	r := dialRaw(t, env.boot, "acme-orders-reader", env.keys["acme-orders-reader"])
	_ = r.c.(*net.TCPConn).SetReadBuffer(1 << 20)
	recs := batchOf(recordValue(0, 300<<10))
	for _, acks := range []int16{0, -1} {
		frame := rawProduceFrame(r, "orders", acks, recs)
		_ = r.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		for len(frame) > 0 { // in pieces, so that the gateway sees the head first
			k := min(len(frame), 16<<10)
			if _, err := r.c.Write(frame[:k]); err != nil {
				t.Fatal(err)
			}
			frame = frame[k:]
		}
	}
	resp := kmsg.ProduceResponse{Version: 9}
	r.recv(&resp)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("answer %+v", resp.Topics)
	}
	if resp.Topics[0].Topic != "orders" {
		t.Fatalf("topic %q", resp.Topics[0].Topic)
	}
	// The answer is the acks=-1 one (corr 2): the acks=0 one had none.
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 9
	r.send(meta)
	mr := kmsg.MetadataResponse{Version: 9}
	r.recv(&mr)
	if len(mr.Brokers) == 0 {
		t.Fatalf("metadata %+v", mr)
	}
}

// (d) acks=0: a large Produce streamed has no answer; the next request's
// answer comes, and the records are there.
func TestStreamProduceAcksZero(t *testing.T) {
	skipOnRealKafka(t)
	env := newTestEnv(t, "")
	most := watchClients(t, env)
	r := leaderConn(t, env)
	vals := [][]byte{recordValue(5, 200<<10), recordValue(6, 200<<10)}
	frame := rawProduceFrame(r, "orders", 0, batchOf(vals...))
	_ = r.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	for len(frame) > 0 {
		k := min(len(frame), 32<<10)
		if _, err := r.c.Write(frame[:k]); err != nil {
			t.Fatal(err)
		}
		frame = frame[k:]
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 9
	r.send(meta)
	mr := kmsg.MetadataResponse{Version: 9}
	r.recv(&mr) // the first answer is the Metadata's: the Produce had none
	if len(mr.Brokers) == 0 {
		t.Fatalf("metadata %+v", mr)
	}
	consumeValues(t, env, vals)
	if m := most.Load(); m >= 350<<10 { // one read is up to 256 KiB
		t.Fatalf("the client connection held %d bytes: the request (400 KiB) was not streamed", m)
	}
}

// (e) A Produce malformed in its middle (a partition's tag section past
// the head) after a part was relayed: that client is closed, logged as a
// malformed request; another client's large Produce goes on.
func TestStreamProduceMalformedMidStream(t *testing.T) {
	skipOnRealKafka(t)
	env := newTestEnv(t, "")
	victim := leaderConn(t, env)
	recs := batchOf(recordValue(9, 400<<10))
	frame := rawProduceFrame(victim, "orders", -1, recs)
	// v9 is flexible: the partition's tag section follows its records; a
	// tag there cannot be dropped once the size is written.
	at := bytes.Index(frame, recs) + len(recs)
	frame[at] = 1
	_ = victim.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	for p := frame; len(p) > 0; {
		k := min(len(p), 16<<10)
		if _, err := victim.c.Write(p[:k]); err != nil {
			break // closed
		}
		p = p[k:]
	}
	_ = victim.c.SetReadDeadline(time.Now().Add(rawDeadline)) // the close, however busy the machine
	if n, err := io.Copy(io.Discard, victim.c); err != nil || n != 0 {
		t.Fatalf("the victim: %d bytes, %v; want a close without an answer", n, err)
	}
	env.waitLog(5*time.Second, "malformed or unknown request", "api_key=0", "streamed Produce")

	other := leaderConn(t, env)
	vals := [][]byte{recordValue(10, 300<<10)}
	frame = rawProduceFrame(other, "orders", -1, batchOf(vals...))
	_ = other.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := other.c.Write(frame); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.ProduceResponse{Version: 9}
	other.recv(&resp)
	if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("answer %+v", resp.Topics)
	}
	consumeValues(t, env, vals)
	if n := env.e.env.Signals.Panics(); n != 0 {
		t.Fatalf("%d panics", n)
	}
}
