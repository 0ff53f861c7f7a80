package codec

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// unitStream is what the two stream rewriters (FetchResponseStream,
// ProduceRequestStream) share once begun, as the tests feed them.
type unitStream interface {
	Feed(chunk []byte) (int, error)
	Slices() [][]byte
	Done() bool
	Remaining() int
	Size() int
}

// vecBytes is what v holds, its slices one after the other (size prefix
// included).
func vecBytes(v *Vec) []byte {
	var out []byte
	for _, s := range v.Slices() {
		out = append(out, s...)
	}
	return out
}

// feedCopies feeds frame to the begun stream s in chunks of size(i) bytes
// as a caller would: the bytes not consumed are given again with the next
// ones; each chunk is a copy that is scribbled over once its output is
// taken, so a reference kept past its Feed shows as wrong bytes. A Feed
// may leave at most maxLeft bytes unconsumed. It returns the output (size
// prefix included), or what it had when Feed failed, or errStalled.
//
// A negative size(i) skips up to -size(i) record bytes when s can skip
// them (a recordSkipper inside records, everything received consumed):
// what the engine's splice does, the skipped bytes reaching the output as
// they are; else it is a chunk of 1 byte.
func feedCopies(t testing.TB, s unitStream, frame []byte, maxLeft int, size func(i int) int) ([]byte, error) {
	var out, buf []byte
	pos, recv := 0, 0
	for i := 0; !s.Done(); i++ {
		step := size(i)
		if step < 0 {
			if sk, ok := s.(recordSkipper); ok && pos == recv {
				if left := sk.RecordsLeft(); left > 0 {
					k := min(-step, left)
					if !sk.SkipRecords(k) {
						t.Fatalf("a skip of %d of %d record bytes refused", k, left)
					}
					out = append(out, frame[pos:pos+k]...)
					pos += k
					recv = pos
					continue
				}
			}
			step = 1
		}
		if recv < len(frame) {
			recv = min(recv+step, len(frame))
		}
		buf = append(buf[:0], frame[pos:recv]...)
		n, err := s.Feed(buf)
		if n < 0 || n > len(buf) {
			t.Fatalf("Feed consumed %d of %d", n, len(buf))
		}
		for _, sl := range s.Slices() {
			out = append(out, sl...)
		}
		for k := range buf {
			buf[k] = 0xEE
		}
		if err != nil {
			return out, err
		}
		pos += n
		if len(buf)-n > maxLeft {
			t.Fatalf("%d bytes left unconsumed", len(buf)-n)
		}
		if n == 0 && recv == len(frame) && !s.Done() {
			return out, errStalled
		}
	}
	if pos != len(frame) || s.Remaining() != 0 {
		t.Fatalf("done at %d of %d", pos, len(frame))
	}
	if len(out) != s.Size()+SizeLen || int(FrameSize(out)) != s.Size() {
		t.Fatalf("output of %d bytes, size %d announced, prefix %d", len(out), s.Size(), FrameSize(out))
	}
	return out, nil
}

// recordSkipper is a stream whose record bytes may reach the client
// another way (FetchResponseStream: the engine's splice).
type recordSkipper interface {
	RecordsLeft() int
	SkipRecords(n int) bool
}

// skipStream is a stream whose record bytes may be skipped, as the tests
// drive it.
type skipStream interface {
	unitStream
	recordSkipper
	Pending() int
}

// feedSkipping feeds frame to the begun stream s in random chunks, and,
// at random inside records, skips some of them (all that is left of the
// partition when toEnd says so for that skip) as the engine's splice does,
// the skipped bytes reaching the output as they are. It checks that a skip
// is refused outside records and with a piece pending, and returns the
// output and the bytes skipped.
func feedSkipping(t testing.TB, s skipStream, frame []byte, rng *rand.Rand, toEnd func() bool) ([]byte, int) {
	var out []byte
	pos, skipped := 0, 0
	for !s.Done() {
		if s.RecordsLeft() == 0 && s.SkipRecords(1) {
			t.Fatal("a skip outside records was taken")
		}
		if left := s.RecordsLeft(); left > 0 && rng.Intn(2) == 0 {
			k := 1 + rng.Intn(left)
			if toEnd() {
				k = left
			}
			if !s.SkipRecords(k) {
				t.Fatalf("skip of %d of %d refused", k, left)
			}
			out = append(out, frame[pos:pos+k]...)
			pos += k
			skipped += k
			continue
		}
		end := min(len(frame), pos+1+rng.Intn(90000))
		n, err := s.Feed(frame[pos:end])
		if err != nil {
			t.Fatal(err)
		}
		if s.Pending() > 0 && s.RecordsLeft() > 0 && s.SkipRecords(1) {
			t.Fatal("a skip with a piece pending was taken")
		}
		for _, sl := range s.Slices() {
			out = append(out, sl...)
		}
		pos += n
	}
	if pos != len(frame) || s.Remaining() != 0 {
		t.Fatalf("done at %d of %d", pos, len(frame))
	}
	return out, skipped
}

// splitSizes is the fuzz targets' chunk sizes, read from splits: the
// whole frame (total bytes) when splits is empty or at a byte of 0xF0 and
// up; with skips, a byte from 0xE0 to 0xEF skips 1 to 601 record bytes
// (a negative size, see feedCopies); else 1 to 97 bytes.
func splitSizes(splits []byte, total int, skips bool) func(i int) int {
	return func(i int) int {
		if len(splits) == 0 {
			return total
		}
		k := splits[i%len(splits)]
		if k >= 0xF0 {
			return total
		}
		if skips && k >= 0xE0 {
			return -(1 + int(k-0xE0)*40)
		}
		return 1 + int(k)%97
	}
}

// feedInPlace feeds frame to the begun stream s in reads of chunk bytes,
// in place (no copy: what the allocation tests and the benchmarks
// measure), taking each Feed's output and dropping it.
func feedInPlace(tb testing.TB, s unitStream, frame []byte, chunk int) {
	for pos, end := 0, 0; !s.Done(); {
		end = min(end+chunk, len(frame))
		n, err := s.Feed(frame[pos:end])
		if err != nil {
			tb.Fatal(err)
		}
		pos += n
		s.Slices()
	}
}

// streamNoAllocs fails the test if a frame streamed through s (begin,
// then reads of 16 KiB in place) allocates, once the first run has sized
// the stream's buffers: what says what is streamed.
func streamNoAllocs(t *testing.T, what string, s unitStream, frame []byte, begin func() error) {
	t.Helper()
	run := func() {
		if err := begin(); err != nil {
			t.Fatal(err)
		}
		feedInPlace(t, s, frame, 16<<10)
	}
	run()
	if a := testing.AllocsPerRun(20, run); a != 0 {
		t.Fatalf("%s: %v allocations per frame", what, a)
	}
}

// oneMiBFetchBody is a Fetch answer body (v11) of one partition of
// acme.orders holding 1 MiB of record bytes, for the benchmarks.
func oneMiBFetchBody() []byte {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 11
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "acme.orders"
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.HighWatermark, rp.LastStableOffset = 100, 100
	rp.PreferredReadReplica = -1
	rp.RecordBatches = bytes.Repeat([]byte{1}, 1<<20)
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	return resp.AppendTo(nil)
}

// oneProduceAnswerBody is a broker's Produce answer body (v9): one topic,
// acme.orders, one partition.
func oneProduceAnswerBody() []byte {
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	tp := kmsg.NewProduceResponseTopic()
	tp.Topic = "acme.orders"
	tp.Partitions = append(tp.Partitions, kmsg.NewProduceResponseTopicPartition())
	resp.Topics = append(resp.Topics, tp)
	return resp.AppendTo(nil)
}
