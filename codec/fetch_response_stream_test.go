package codec

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// perTopicJudge maps names with renames of different lengths, so that the
// stream's size depends on which topics the answer holds.
type perTopicJudge map[string]string

func (m perTopicJudge) FetchTopic(n []byte) ([]byte, int16) { return nil, 3 }
func (m perTopicJudge) ClientTopic(p []byte) ([]byte, bool) {
	c, ok := m[string(p)]
	return []byte(c), ok
}

var (
	perTopic      = perTopicJudge{"acme.orders": "orders", "acme.payments": "a-longer-name-for-payments"}
	perTopicAsked = [][]byte{[]byte("acme.orders"), []byte("acme.payments")}
	prefixAsked   = [][]byte{[]byte("acme.orders"), []byte("acme.payments")}
)

// responseFrame is a broker's Fetch answer after the size prefix: header
// (with a tag section when hdrTags, flexible versions) and body.
func responseFrame(v int16, body []byte, hdrTags bool) []byte {
	f := kbinInt32(nil, 0x5eed)
	if v >= 12 {
		if hdrTags {
			f = append(f, 1, 3, 2, 'h', 't')
		} else {
			f = append(f, 0)
		}
	}
	return append(f, body...)
}

func kbinInt32(b []byte, x int32) []byte {
	return append(b, byte(x>>24), byte(x>>16), byte(x>>8), byte(x))
}

// wholeRewrite is the whole-frame form's output (size prefix included).
func wholeRewrite(v int16, frame []byte, j FetchJudge, dropped *Dropped) ([]byte, error) {
	_, body, err := ParseResponseHeader(frame, 1, v)
	if err != nil {
		return nil, err
	}
	var w Rewriter
	if err := w.FetchResponse(v, fuzzCorr, body, j, dropped, 100); err != nil {
		return nil, err
	}
	return vecBytes(&w.Vec), nil
}

var errStalled = errors.New("test: stream stalled with the whole frame fed")

// streamRewrite feeds frame to s in chunks of size(i) bytes as a caller
// would: the bytes not consumed are given again with the next ones; each
// chunk is a copy that is scribbled over once its output is taken, so a
// reference kept past its Feed shows as wrong bytes. A negative size(i)
// skips up to that many record bytes when the stream is inside records
// (SkipRecords: they go to the output as they are), else feeds one byte.
func streamRewrite(t testing.TB, s *FetchResponseStream, v int16, frame []byte, asked [][]byte, j FetchJudge, dropped *Dropped, size func(i int) int) ([]byte, error) {
	if err := s.Begin(v, fuzzCorr, len(frame), asked, j, dropped, 100); err != nil {
		return nil, err
	}
	return feedCopies(t, s, frame, MaxStreamUnit, size)
}

// canonical tells whether body is an answer as a broker sends it to the
// request: kmsg reads it and writes it back byte for byte, no unknown tag
// anywhere, every topic one the judge maps (and, with renames of different
// lengths, exactly the asked ones). The stream must rewrite such an answer.
func canonical(v int16, body []byte, j FetchJudge, uniform bool) bool {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = v
	if resp.ReadFrom(body) != nil || !bytes.Equal(resp.AppendTo(nil), body) || resp.UnknownTags.Len() != 0 {
		return false
	}
	seen := map[string]bool{}
	for _, tp := range resp.Topics {
		if tp.UnknownTags.Len() != 0 {
			return false
		}
		if _, ok := j.ClientTopic([]byte(tp.Topic)); !ok {
			return false
		}
		if seen[tp.Topic] && !uniform {
			return false
		}
		seen[tp.Topic] = true
		for _, pp := range tp.Partitions {
			if pp.UnknownTags.Len() != 0 || pp.DivergingEpoch.UnknownTags.Len() != 0 ||
				pp.CurrentLeader.UnknownTags.Len() != 0 || pp.SnapshotID.UnknownTags.Len() != 0 {
				return false
			}
			for _, a := range pp.AbortedTransactions {
				if a.UnknownTags.Len() != 0 {
					return false
				}
			}
		}
	}
	return uniform || len(resp.Topics) == 0 || len(resp.Topics) == len(perTopicAsked)
}

// cleanFetchResponse is an answer as a broker sends it: the asked topics
// only, no unknown tags; recSize bytes of records per partition.
func cleanFetchResponse(v int16, recSize, parts int, rng *rand.Rand, topics ...string) []byte {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = v
	resp.ThrottleMillis = 5
	resp.SessionID = 77
	for ti, name := range topics {
		tp := kmsg.NewFetchResponseTopic()
		tp.Topic = name
		for p := 0; p < parts; p++ {
			pp := kmsg.NewFetchResponseTopicPartition()
			pp.Partition = int32(p)
			pp.HighWatermark, pp.LastStableOffset, pp.LogStartOffset = 1000, 999, 3
			pp.PreferredReadReplica = -1
			if p%2 == 0 {
				for a := 0; a < 3; a++ {
					at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					at.ProducerID, at.FirstOffset = int64(a), int64(10*a)
					pp.AbortedTransactions = append(pp.AbortedTransactions, at)
				}
			}
			switch {
			case p == 1 && ti == 0:
				pp.RecordBatches = nil
			case p == 2:
				pp.RecordBatches = []byte("short")
			default:
				recs := make([]byte, recSize)
				rng.Read(recs)
				pp.RecordBatches = recs
			}
			if v >= 12 && p == 0 {
				pp.DivergingEpoch.Epoch, pp.DivergingEpoch.EndOffset = 2, 8
				pp.CurrentLeader.LeaderID, pp.CurrentLeader.LeaderEpoch = 1, 2
			}
			tp.Partitions = append(tp.Partitions, pp)
		}
		resp.Topics = append(resp.Topics, tp)
	}
	return resp.AppendTo(nil)
}

// --- FuzzFetchResponseStream -----------------------------------------------

// Invariant: for any input and any split of it into chunks (derived from
// splits), the stream's output is the whole-frame form's output byte for
// byte, or both fail; or the stream alone fails with ErrCodecUnforeseen
// (or ErrCodecUnitTooLong) for an answer a broker does not send to the
// request (see canonical): the documented difference.
func FuzzFetchResponseStream(f *testing.F) {
	rng := rand.New(rand.NewSource(1))
	for v := int16(4); v <= 12; v++ {
		body := fetchResponseSeed(v, "acme.orders", "globex.orders", "globex.acme.orders", "orders")
		f.Add(uint8(v), false, false, false, body, []byte{7})
		f.Add(uint8(v), true, true, false, body, []byte{1, 200, 3})
		clean := cleanFetchResponse(v, 700, 3, rng, "acme.orders", "acme.payments")
		f.Add(uint8(v), false, false, false, clean, []byte{})
		f.Add(uint8(v), true, true, true, clean, []byte{0})
		f.Add(uint8(v), false, false, true, clean, []byte{5, 9, 250, 1})
		f.Add(uint8(v), true, false, false, clean, []byte{60, 0xE3, 0xEF, 7})
		f.Add(uint8(v), false, false, false, cleanFetchResponse(v, 10, 1, rng, "acme.orders"), []byte{2})
		if v == 4 || v == 7 || v == 11 || v == 12 {
			f.Add(uint8(v), true, false, false, fetchResponseSeed(v), []byte{})
			f.Add(uint8(v), false, false, false, fetchResponseSeed(v, "globex.payments"), []byte{3})
			f.Add(uint8(v), false, false, false, body[:len(body)-1], []byte{3})
			f.Add(uint8(v), false, false, false, append(append([]byte(nil), body...), 0), []byte{3})
			f.Add(uint8(v), false, false, false, clean[:len(clean)-1], []byte{3})
			f.Add(uint8(v), false, false, true, append(append([]byte(nil), clean...), 0), []byte{30})
		}
	}
	f.Add(uint8(3), false, false, false, fetchResponseSeed(4, "acme.orders"), []byte{})
	f.Add(uint8(13), false, false, false, fetchResponseSeed(12, "acme.orders"), []byte{})

	f.Fuzz(func(t *testing.T, ver uint8, withDropped, hdrTags, nonUniform bool, body, splits []byte) {
		v := int16(ver % 16)
		var dropped *Dropped
		if withDropped {
			dropped = &Dropped{}
			dt := dropped.add([]byte("deny-x"), 29)
			dt.Partitions = []int32{0, 1, 2}
		}
		var j FetchJudge = &prefixJudge{}
		asked := prefixAsked
		if nonUniform {
			j, asked = perTopic, perTopicAsked
		}
		frame := responseFrame(v, body, hdrTags)
		want, werr := wholeRewrite(v, frame, j, dropped)
		size := splitSizes(splits, len(frame), true)
		var s FetchResponseStream
		got, serr := streamRewrite(t, &s, v, frame, asked, j, dropped, size)
		switch {
		case errors.Is(serr, errStalled):
			t.Fatal("the stream stalled with the whole frame fed")
		case werr != nil && serr == nil:
			t.Fatalf("v%d: the whole-frame form fails (%v), the stream does not", v, werr)
		case werr != nil:
		case serr == nil:
			if !bytes.Equal(got, want) {
				t.Fatalf("v%d: stream output differs from the whole-frame form:\n%x\n%x", v, got, want)
			}
		case errors.Is(serr, ErrCodecUnforeseen) || errors.Is(serr, ErrCodecUnitTooLong):
			if canonical(v, body, j, !nonUniform) {
				t.Fatalf("v%d: the stream refuses a broker's answer (%v)", v, serr)
			}
		default:
			t.Fatalf("v%d: the stream fails (%v), the whole-frame form does not", v, serr)
		}
	})
}

// --- unit tests ------------------------------------------------------------

// FetchAsked lists the broker's names the last FetchRequest forwarded.
func TestFetchAsked(t *testing.T) {
	frame := fetchRequestSeed(12, "orders", "deny-x", "payments")
	h, err := ParseRequestHeader(frame)
	if err != nil {
		t.Fatal(err)
	}
	var w Rewriter
	if _, err := w.FetchRequest(&h, 1, nil, frame[h.BodyOffset:], &prefixJudge{}, FetchLimits{}); err != nil {
		t.Fatal(err)
	}
	got := w.FetchAsked(nil)
	if len(got) != 2 || string(got[0]) != "acme.orders" || string(got[1]) != "acme.payments" {
		t.Fatalf("asked %q", got)
	}
}

// Multi-MiB answers (three topics of four partitions), v4 and v12, fed one
// byte at a time and in random chunks: the same bytes as the whole frame.
func TestFetchResponseStreamLarge(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	var s FetchResponseStream // reused from answer to answer
	for _, v := range []int16{4, 12} {
		body := cleanFetchResponse(v, 400<<10, 4, rng, "acme.orders", "acme.payments", "acme.audit")
		frame := responseFrame(v, body, true)
		if len(frame) < 3<<20 {
			t.Fatalf("answer of %d bytes only", len(frame))
		}
		dropped := &Dropped{}
		dropped.add([]byte("deny-x"), 29).Partitions = []int32{0, 1}
		want, err := wholeRewrite(v, frame, &prefixJudge{}, dropped)
		if err != nil {
			t.Fatal(err)
		}
		asked := [][]byte{[]byte("acme.orders"), []byte("acme.payments"), []byte("acme.audit")}
		for name, size := range map[string]func(int) int{
			"bytewise": func(int) int { return 1 },
			"random":   func(int) int { return 1 + rng.Intn(70000) },
			"whole":    func(int) int { return len(frame) },
		} {
			got, err := streamRewrite(t, &s, v, frame, asked, &prefixJudge{}, dropped, size)
			if err != nil {
				t.Fatalf("v%d %s: %v", v, name, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("v%d %s: output differs from the whole-frame form", v, name)
			}
		}
	}
}

// Renames of different lengths: the size comes from the asked topics; an
// answer holding a topic not asked is refused once its header arrives,
// where the whole-frame form leaves it out.
func TestFetchResponseStreamAskedTopics(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, v := range []int16{4, 12} {
		one := func(int) int { return 1 + rng.Intn(900) }
		var s FetchResponseStream
		// Out of order: matched by name.
		frame := responseFrame(v, cleanFetchResponse(v, 5000, 2, rng, "acme.payments", "acme.orders"), false)
		want, err := wholeRewrite(v, frame, perTopic, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := streamRewrite(t, &s, v, frame, perTopicAsked, perTopic, nil, one)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("v%d: %v", v, err)
		}
		for _, topics := range [][]string{
			{"acme.orders", "globex.orders"}, // a topic not asked
			{"acme.orders", "acme.orders"},   // one asked twice, one missing
			{"acme.orders"},                  // fewer than asked
			{"acme.orders", "acme.payments", "acme.orders"},
		} {
			frame := responseFrame(v, cleanFetchResponse(v, 5000, 2, rng, topics...), false)
			if _, err := wholeRewrite(v, frame, perTopic, nil); err != nil {
				t.Fatalf("whole-frame: %v", err)
			}
			if _, err := streamRewrite(t, &s, v, frame, perTopicAsked, perTopic, nil, one); !errors.Is(err, ErrCodecUnforeseen) {
				t.Fatalf("v%d %v: %v, want ErrCodecUnforeseen", v, topics, err)
			}
		}
		// Uniform renames (the tenant prefix): any of the tenant's topics,
		// in any number; another tenant's is refused.
		frame = responseFrame(v, cleanFetchResponse(v, 5000, 2, rng, "acme.orders", "acme.x", "acme.orders"), false)
		want, _ = wholeRewrite(v, frame, &prefixJudge{}, nil)
		if got, err := streamRewrite(t, &s, v, frame, prefixAsked, &prefixJudge{}, nil, one); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("v%d uniform: %v", v, err)
		}
		frame = responseFrame(v, cleanFetchResponse(v, 5000, 2, rng, "acme.orders", "globex.orders"), false)
		if _, err := streamRewrite(t, &s, v, frame, prefixAsked, &prefixJudge{}, nil, one); !errors.Is(err, ErrCodecUnforeseen) {
			t.Fatalf("v%d globex: %v", v, err)
		}
	}
}

// A v12 answer with an unknown partition tag: the whole-frame form drops
// it, the stream (its size already written) refuses the answer; no byte of
// the tag crosses in what it wrote before.
func TestFetchResponseStreamUnknownTag(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	tp := kmsg.NewFetchResponseTopic()
	tp.Topic = "acme.orders"
	pp := kmsg.NewFetchResponseTopicPartition()
	pp.RecordBatches = bytes.Repeat([]byte("r"), 2000)
	pp.UnknownTags.Set(33, []byte("globex-secret"))
	tp.Partitions = append(tp.Partitions, pp)
	resp.Topics = append(resp.Topics, tp)
	frame := responseFrame(12, resp.AppendTo(nil), false)
	var s FetchResponseStream
	out, err := streamRewrite(t, &s, 12, frame, prefixAsked, &prefixJudge{}, nil, func(int) int { return 100 })
	if !errors.Is(err, ErrCodecUnforeseen) {
		t.Fatalf("%v, want ErrCodecUnforeseen", err)
	}
	if bytes.Contains(out, []byte("globex")) {
		t.Fatal("the unknown tag crossed")
	}
}

// A unit (here a topic name) longer than MaxStreamUnit is refused rather
// than waited for without bound.
func TestFetchResponseStreamUnitBound(t *testing.T) {
	name := "acme." + string(bytes.Repeat([]byte("n"), 2*MaxStreamUnit))
	frame := responseFrame(12, cleanFetchResponse(12, 10, 1, rand.New(rand.NewSource(1)), name), false)
	var s FetchResponseStream
	_, err := streamRewrite(t, &s, 12, frame, prefixAsked, &prefixJudge{}, nil, func(int) int { return 4096 })
	if !errors.Is(err, ErrCodecUnitTooLong) {
		t.Fatalf("%v, want ErrCodecUnitTooLong", err)
	}
}

// Bytes after the frame (the next answer) are not taken.
func TestFetchResponseStreamStopsAtFrameEnd(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	frame := responseFrame(12, cleanFetchResponse(12, 3000, 2, rng, "acme.orders"), false)
	var s FetchResponseStream
	if err := s.Begin(12, 1, len(frame), prefixAsked, &prefixJudge{}, nil, 0); err != nil {
		t.Fatal(err)
	}
	n, err := s.Feed(append(append([]byte(nil), frame...), 0, 0, 0, 9, 1, 2))
	if err != nil || n != len(frame) || !s.Done() {
		t.Fatalf("consumed %d of a %d-byte frame, done %v, %v", n, len(frame), s.Done(), err)
	}
}

// The steady state allocates nothing: Begin, Feeds, Slices.
func TestFetchResponseStreamNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for _, v := range []int16{4, 12} {
		frame := responseFrame(v, cleanFetchResponse(v, 200<<10, 3, rng, "acme.orders", "acme.payments"), false)
		j := mapJudge{}
		var s FetchResponseStream
		streamNoAllocs(t, fmt.Sprintf("answer v%d", v), &s, frame, func() error {
			return s.Begin(v, 1, len(frame), prefixAsked, j, nil, 0)
		})
	}
}

// Beside BenchmarkFetchResponseRewrite: the same 1 MiB answer streamed in
// 64 KiB reads (17 Feeds) and in one. Measured (go test -bench FetchResponse
// -benchmem -count=3, 2 vCPUs shared; range over the runs):
//
//	BenchmarkFetchResponseRewrite/records=1MiB              130-149 ns/op  0 B/op  0 allocs/op
//	BenchmarkFetchResponseStream/records=1MiB/reads=64KiB   631-761 ns/op  0 B/op  0 allocs/op
//	BenchmarkFetchResponseStream/records=1MiB/reads=whole   189-278 ns/op  0 B/op  0 allocs/op
//
// About 30 ns per Feed: the cost follows the reads, never the records' size.
func BenchmarkFetchResponseStream(b *testing.B) {
	const size = 1 << 20
	frame := responseFrame(11, oneMiBFetchBody(), false)
	asked := [][]byte{[]byte("acme.orders")}
	j := mapJudge{}
	for _, c := range []struct {
		name  string
		chunk int
	}{{"records=1MiB/reads=64KiB", 64 << 10}, {"records=1MiB/reads=whole", len(frame)}} {
		chunk := c.chunk
		b.Run(c.name, func(b *testing.B) {
			var s FetchResponseStream
			b.SetBytes(size)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := s.Begin(11, int32(i), len(frame), asked, j, nil, 0); err != nil {
					b.Fatal(err)
				}
				feedInPlace(b, &s, frame, chunk)
			}
		})
	}
}

// SkipRecords: record bytes that reach the client another way (the
// engine's splice) are accounted for, and the stream goes on with what
// follows them: the client sees the same bytes as the whole-frame form,
// whatever is skipped, wherever; a skip is refused outside records or
// with a piece pending.
func TestFetchResponseStreamSkipRecords(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	var s FetchResponseStream
	for _, v := range []int16{4, 11, 12} {
		frame := responseFrame(v, cleanFetchResponse(v, 200<<10, 3, rng, "acme.orders", "acme.payments"), v == 12)
		want, err := wholeRewrite(v, frame, &prefixJudge{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		asked := [][]byte{[]byte("acme.orders"), []byte("acme.payments")}
		for round := 0; round < 20; round++ {
			if err := s.Begin(v, fuzzCorr, len(frame), asked, &prefixJudge{}, nil, 100); err != nil {
				t.Fatal(err)
			}
			if s.SkipRecords(1) {
				t.Fatal("a skip before any record was taken")
			}
			out, skipped := feedSkipping(t, &s, frame, rng, func() bool { return false })
			if !bytes.Equal(out, want) || skipped == 0 {
				t.Fatalf("v%d round %d: %d bytes skipped, output differs from the whole-frame form", v, round, skipped)
			}
		}
	}
}
