package codec

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// wholeProduce is the whole-frame form's output (size prefix included) and
// what it tells of the request.
func wholeProduce(frame []byte, j ProduceJudge) ([]byte, ProduceInfo, int, error) {
	h, err := ParseRequestHeader(frame)
	if err != nil {
		return nil, ProduceInfo{}, 0, err
	}
	var w Rewriter
	info, err := w.Produce(&h, fuzzCorr, fuzzClientOut, frame[h.BodyOffset:], j)
	if err != nil {
		return nil, info, 0, err
	}
	return vecBytes(&w.Vec), info, w.Dropped.Len(), nil
}

// streamProduce begins s with the frame's first cut bytes (again with the
// whole head if they are too few) and feeds it in chunks of size(i) bytes
// as the engine does: the bytes not consumed are given again with the next
// ones; the prefix and each chunk are copies scribbled over after use.
func streamProduce(t testing.TB, s *ProduceRequestStream, frame []byte, cut int, j ProduceJudge, size func(i int) int) ([]byte, error) {
	h, err := ParseRequestHeader(frame)
	if err != nil {
		return nil, err
	}
	lim := min(len(frame), MaxStreamUnit)
	if cut > lim || cut < h.BodyOffset {
		cut = lim
	}
	prefix := append([]byte(nil), frame[:cut]...)
	h, _ = ParseRequestHeader(prefix)
	err = s.Begin(&h, prefix, len(frame), fuzzCorr, fuzzClientOut, j)
	if errors.Is(err, ErrCodecShort) {
		if cut >= lim {
			t.Fatalf("Begin wants more than %d bytes of %d", cut, len(frame))
		}
		prefix = append(prefix[:0], frame[:lim]...)
		h, _ = ParseRequestHeader(prefix)
		err = s.Begin(&h, prefix, len(frame), fuzzCorr, fuzzClientOut, j)
	}
	for k := range prefix {
		prefix[k] = 0xEE
	}
	if err != nil {
		return nil, err
	}
	return feedCopies(t, s, frame, 16, size)
}

// canonicalProduce tells whether frame is a Produce request as a client
// library writes it: kmsg reads it and writes it back byte for byte, no
// unknown tag anywhere. The stream must relay such a request.
func canonicalProduce(frame []byte) bool {
	h, err := ParseRequestHeader(frame)
	if err != nil || h.Key != KeyProduce {
		return false
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version = h.Version
	body := frame[h.BodyOffset:]
	if req.ReadFrom(body) != nil || !bytes.Equal(req.AppendTo(nil), body) || req.UnknownTags.Len() != 0 {
		return false
	}
	for _, t := range req.Topics {
		if t.UnknownTags.Len() != 0 {
			return false
		}
		for _, p := range t.Partitions {
			if p.UnknownTags.Len() != 0 {
				return false
			}
		}
	}
	return true
}

// cleanProduce is one topic's Produce request with parts partitions of
// recSize record bytes each (random), as a client writes it.
func cleanProduce(v int16, txn *string, acks int16, recSize, parts int, rng *rand.Rand, topic string) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.Version = v
	req.TransactionID = txn
	req.Acks = acks
	req.TimeoutMillis = 30000
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = topic
	for p := 0; p < parts; p++ {
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition = int32(p)
		pp.Records = make([]byte, recSize)
		rng.Read(pp.Records)
		tp.Partitions = append(tp.Partitions, pp)
	}
	req.Topics = append(req.Topics, tp)
	return frameOf(req, 42, fuzzClient)
}

func FuzzProduceRequestStream(f *testing.F) {
	rng := rand.New(rand.NewSource(1))
	tx := "tx-1"
	for v := int16(0); v <= 12; v++ {
		var txn *string
		if v >= 3 && v%2 == 1 {
			txn = &tx
		}
		clean := cleanProduce(v, txn, -1, 700, 3, rng, "orders")
		f.Add(clean, uint16(0), []byte{})
		f.Add(clean, uint16(20), []byte{0})
		f.Add(withHeaderTags(clean), uint16(9), []byte{5, 9, 250, 1})
		f.Add(cleanProduce(v, nil, 0, 10, 1, rng, "orders"), uint16(0), []byte{2})
		f.Add(cleanProduce(v, nil, 1, 0, 0, rng, "orders"), uint16(0), []byte{1})
		f.Add(produceSeed(v, txn, -1, "orders"), uint16(30), []byte{3})
		f.Add(produceSeed(v, txn, -1, "orders", "deny-x"), uint16(0), []byte{3})
		f.Add(produceSeed(v, txn, 1, "deny-x"), uint16(0), []byte{3})
		f.Add(clean[:len(clean)-1], uint16(0), []byte{3})
		f.Add(append(append([]byte(nil), clean...), 0), uint16(0), []byte{30})
	}
	f.Fuzz(func(t *testing.T, frame []byte, cut uint16, splits []byte) {
		j := &prefixJudge{}
		want, info, dropped, werr := wholeProduce(frame, j)
		size := splitSizes(splits, len(frame), true) // record bytes skipped too (the engine's splice)
		var s ProduceRequestStream
		got, serr := streamProduce(t, &s, frame, int(cut), j, size)
		switch {
		case errors.Is(serr, errStalled):
			t.Fatal("the stream stalled with the whole frame fed")
		case errors.Is(serr, ErrCodecNotStreamed):
			if werr == nil && info.Kept == 1 && dropped == 0 && len(frame) < MaxStreamUnit && canonicalProduce(frame) {
				t.Fatalf("a one-topic request not streamed")
			}
		case werr != nil && serr == nil:
			t.Fatalf("the whole-frame form fails (%v), the stream does not", werr)
		case werr != nil:
		case serr == nil:
			if !bytes.Equal(got, want) {
				t.Fatalf("stream output differs from the whole-frame form:\n%x\n%x", got, want)
			}
		case errors.Is(serr, ErrCodecUnforeseen) || errors.Is(serr, ErrCodecUnitTooLong):
			if canonicalProduce(frame) {
				t.Fatalf("the stream refuses a client's request (%v)", serr)
			}
		default:
			t.Fatalf("the stream fails (%v), the whole-frame form does not", serr)
		}
	})
}

// A large request of every version, byte by byte and in random chunks,
// the same bytes as the whole-frame form; the records are referenced.
func TestProduceRequestStreamLarge(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	tx := "tx"
	for _, v := range []int16{2, 3, 8, 9, 12} {
		var txn *string
		if v >= 3 {
			txn = &tx
		}
		frame := cleanProduce(v, txn, -1, 600<<10, 6, rng, "orders")
		want, _, _, err := wholeProduce(frame, &prefixJudge{})
		if err != nil {
			t.Fatal(err)
		}
		for name, size := range map[string]func(int) int{
			"one byte":      func(int) int { return 1 },
			"random chunks": func(int) int { return 1 + rng.Intn(300<<10) },
		} {
			var s ProduceRequestStream
			got, err := streamProduce(t, &s, frame, 0, &prefixJudge{}, size)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("v%d %s: %v, same bytes %v", v, name, err, bytes.Equal(got, want))
			}
		}
	}
}

// SkipRecords: record bytes that reach the broker another way (the
// engine's splice) are accounted for, and the stream goes on with what
// follows them: the broker sees the same bytes as the whole-frame form,
// whatever is skipped, wherever (the frame's last bytes included); a skip
// is refused outside records or with a piece pending.
func TestProduceRequestStreamSkipRecords(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	tx := "tx"
	var s ProduceRequestStream
	for _, v := range []int16{3, 8, 9, 12} {
		frame := cleanProduce(v, &tx, -1, 200<<10, 3, rng, "orders")
		want, _, _, err := wholeProduce(frame, &prefixJudge{})
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 20; round++ {
			h, _ := ParseRequestHeader(frame)
			if err := s.Begin(&h, frame[:MaxStreamUnit], len(frame), fuzzCorr, fuzzClientOut, &prefixJudge{}); err != nil {
				t.Fatal(err)
			}
			out, skipped := feedSkipping(t, &s, frame, rng, func() bool { return round%4 == 0 }) // to the partition's end: for the last, the frame's
			if !bytes.Equal(out, want) || skipped == 0 {
				t.Fatalf("v%d round %d: %d bytes skipped, output differs from the whole-frame form", v, round, skipped)
			}
		}
	}
}

// What is not streamed: several topics, a refused topic, a head that does
// not fit MaxStreamUnit; a head cut short asks for more.
func TestProduceRequestStreamNotStreamed(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	j := &prefixJudge{}
	begin := func(frame []byte, n int) error {
		h, err := ParseRequestHeader(frame)
		if err != nil {
			t.Fatal(err)
		}
		var s ProduceRequestStream
		return s.Begin(&h, frame[:n], len(frame), 1, nil, j)
	}
	two := produceSeed(9, nil, -1, "orders", "payments")
	if err := begin(two, len(two)); !errors.Is(err, ErrCodecNotStreamed) {
		t.Fatalf("two topics: %v", err)
	}
	deny := cleanProduce(9, nil, -1, 100, 2, rng, "deny-me")
	if err := begin(deny, len(deny)); !errors.Is(err, ErrCodecNotStreamed) {
		t.Fatalf("refused topic: %v", err)
	}
	ok := cleanProduce(9, nil, -1, 100<<10, 2, rng, "orders")
	if err := begin(ok, 30); !errors.Is(err, ErrCodecShort) {
		t.Fatalf("cut head: %v", err)
	}
	if err := begin(ok, 100); err != nil {
		t.Fatalf("whole head: %v", err)
	}
	long := string(bytes.Repeat([]byte("t"), MaxStreamUnit))
	big := cleanProduce(9, &long, -1, 100<<10, 2, rng, "orders")
	if err := begin(big, MaxStreamUnit); !errors.Is(err, ErrCodecNotStreamed) {
		t.Fatalf("head past MaxStreamUnit: %v", err)
	}
}

// A tag the client sent inside a partition cannot be dropped once the
// size is written: refused before any of its bytes is.
func TestProduceRequestStreamUnknownTag(t *testing.T) {
	frame := produceSeed(9, nil, -1, "orders") // partition 1 has a tag
	var s ProduceRequestStream
	_, err := streamProduce(t, &s, frame, 0, &prefixJudge{}, func(int) int { return 7 })
	if !errors.Is(err, ErrCodecUnforeseen) {
		t.Fatalf("got %v", err)
	}
	if _, _, _, err := wholeProduce(frame, &prefixJudge{}); err != nil {
		t.Fatal(err)
	}
}

func TestProduceRequestStreamNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for _, v := range []int16{7, 12} {
		frame := cleanProduce(v, nil, -1, 200<<10, 3, rng, "orders")
		j := mapJudge{"orders": []byte("acme.orders")}
		h, err := ParseRequestHeader(frame)
		if err != nil {
			t.Fatal(err)
		}
		var s ProduceRequestStream
		streamNoAllocs(t, fmt.Sprintf("request v%d", v), &s, frame, func() error {
			return s.Begin(&h, frame[:1024], len(frame), 1, fuzzClientOut, j)
		})
	}
}

// The whole-frame rewrite of a 1 MiB one-topic Produce against the same
// request streamed in 64 KiB reads and in one. Measured (-benchtime 2000x,
// 2 vCPUs shared with other builds):
//
//	BenchmarkProduceRequestStream/whole         308 ns/op  0 allocs/op
//	BenchmarkProduceRequestStream/reads=64KiB   608 ns/op  0 allocs/op
//	BenchmarkProduceRequestStream/reads=whole   281 ns/op  0 allocs/op
//
// The cost follows the reads (about 20 ns per Feed), never the records' size.
//
//	go test ./codec -run '^$' -bench ProduceRequest -benchmem
func BenchmarkProduceRequestStream(b *testing.B) {
	rng := rand.New(rand.NewSource(5))
	frame := cleanProduce(9, nil, -1, 256<<10, 4, rng, "orders")
	j := mapJudge{"orders": []byte("acme.orders")}
	h, err := ParseRequestHeader(frame)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("whole", func(b *testing.B) {
		var w Rewriter
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := w.Produce(&h, 1, fuzzClientOut, frame[h.BodyOffset:], j); err != nil {
				b.Fatal(err)
			}
			w.Vec.Slices()
		}
	})
	for _, read := range []int{64 << 10, len(frame)} {
		name := "reads=64KiB"
		if read == len(frame) {
			name = "reads=whole"
		}
		b.Run(name, func(b *testing.B) {
			var s ProduceRequestStream
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := s.Begin(&h, frame[:1024], len(frame), 1, fuzzClientOut, j); err != nil {
					b.Fatal(err)
				}
				feedInPlace(b, &s, frame, read)
			}
		})
	}
}
