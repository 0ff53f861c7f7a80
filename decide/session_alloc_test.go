package decide

import (
	"bytes"
	"testing"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The forward path through the session: Session.Request and
// Session.Response for Produce and Fetch, the Pending reused as the engine
// recycles it.
//
//	go test ./decide -run '^$' -bench Session -benchmem

// hotFrames are a Produce and a Fetch of acme's orders, and the broker's
// answers to them.
type hotFrames struct {
	produce, produceAnswer []byte
	fetch, fetchAnswer     []byte
}

func newHotFrames() hotFrames {
	pr := kmsg.NewPtrProduceRequest()
	pr.Version, pr.Acks, pr.TimeoutMillis = 9, -1, 30000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "orders"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = bytes.Repeat([]byte{1}, 16<<10)
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)

	pa := kmsg.NewPtrProduceResponse()
	pa.Version = 9
	pat := kmsg.NewProduceResponseTopic()
	pat.Topic = "acme.orders"
	pat.Partitions = append(pat.Partitions, kmsg.NewProduceResponseTopicPartition())
	pa.Topics = append(pa.Topics, pat)

	fr := kmsg.NewPtrFetchRequest()
	fr.Version, fr.ReplicaID, fr.MaxWaitMillis, fr.MaxBytes = 12, -1, 500, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "orders"
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
	fr.Topics = append(fr.Topics, ft)

	fa := kmsg.NewPtrFetchResponse()
	fa.Version = 12
	fat := kmsg.NewFetchResponseTopic()
	fat.Topic = "acme.orders"
	fap := kmsg.NewFetchResponseTopicPartition()
	fap.RecordBatches = bytes.Repeat([]byte{1}, 64<<10)
	fat.Partitions = append(fat.Partitions, fap)
	fa.Topics = append(fa.Topics, fat)

	return hotFrames{
		produce:       reqFrame(pr, 1, "app-1"),
		produceAnswer: append(codec.AppendResponseHeader(nil, 0, 9, 2), pa.AppendTo(nil)...),
		fetch:         reqFrame(fr, 3, "app-1"),
		fetchAnswer:   append(codec.AppendResponseHeader(nil, 1, 12, 4), fa.AppendTo(nil)...),
	}
}

// roundTrip judges frame and rewrites the broker's answer, as the engine does.
func roundTrip(tb testing.TB, s *Session, p *Pending, frame, answer []byte, upCorr int32) {
	h, err := codec.ParseRequestHeader(frame)
	if err != nil {
		tb.Fatal(err)
	}
	if out := s.Request(&h, frame, upCorr, testGrant, p); out != Forward {
		tb.Fatalf("%s: outcome %d (%s)", Name(h.Key), out, p.Cause)
	}
	s.RW.Vec.Slices()
	if err := s.Response(p, answer); err != nil {
		tb.Fatalf("%s answer: %v", Name(h.Key), err)
	}
	s.RW.Vec.Slices()
}

// The steady state allocates nothing, like codec's rewriters under it.
func TestSessionHotPathAllocs(t *testing.T) {
	s := fuzzSession(t, false)
	f := newHotFrames()
	var p Pending
	for _, c := range []struct {
		name          string
		frame, answer []byte
		upCorr        int32
	}{{"Produce", f.produce, f.produceAnswer, 2}, {"Fetch", f.fetch, f.fetchAnswer, 4}} {
		roundTrip(t, s, &p, c.frame, c.answer, c.upCorr) // the scratch grows once
		n := testing.AllocsPerRun(200, func() { roundTrip(t, s, &p, c.frame, c.answer, c.upCorr) })
		if n != 0 {
			t.Errorf("%s through the session allocates %v per request and answer", c.name, n)
		}
	}
}

func BenchmarkSessionProduce(b *testing.B) {
	s := fuzzSession(b, false)
	f := newHotFrames()
	var p Pending
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		roundTrip(b, s, &p, f.produce, f.produceAnswer, 2)
	}
}

func BenchmarkSessionFetch(b *testing.B) {
	s := fuzzSession(b, false)
	f := newHotFrames()
	var p Pending
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		roundTrip(b, s, &p, f.fetch, f.fetchAnswer, 4)
	}
}

// streamTrip judges the Fetch frame and rewrites the broker's answer as it
// arrives, fed in pieces of 7 bytes as the engine feeds what it has read;
// out (reused) collects the client frame.
func streamTrip(tb testing.TB, s *Session, p *Pending, frame, answer []byte, out []byte) []byte {
	h, err := codec.ParseRequestHeader(frame)
	if err != nil {
		tb.Fatal(err)
	}
	if o := s.Request(&h, frame, 4, testGrant, p); o != Forward {
		tb.Fatalf("outcome %d (%s)", o, p.Cause)
	}
	s.RW.Vec.Slices()
	fs, err := s.FetchStream(p, len(answer))
	if err != nil {
		tb.Fatal(err)
	}
	out = out[:0]
	for pos, recv := 0, 0; !fs.Done(); {
		recv = min(len(answer), recv+7) // what has arrived
		n, err := fs.Feed(answer[pos:recv])
		if err != nil {
			tb.Fatal(err)
		}
		if n == 0 && recv == len(answer) {
			tb.Fatal("the stream stalls with the whole answer fed")
		}
		pos += n
		for _, sl := range fs.Slices() {
			out = append(out, sl...)
		}
	}
	return out
}

// Issue 11.1: the streamed answer (Session.FetchStream, the asked topics
// kept in the Pending) is the whole-frame answer, byte for byte, and its
// steady state allocates nothing either.
func TestSessionFetchStreamAllocs(t *testing.T) {
	s := fuzzSession(t, false)
	f := newHotFrames()
	var p Pending
	roundTrip(t, s, &p, f.fetch, f.fetchAnswer, 4)
	if err := s.Response(&p, f.fetchAnswer); err != nil {
		t.Fatal(err)
	}
	var want []byte
	for _, sl := range s.RW.Vec.Slices() {
		want = append(want, sl...)
	}
	out := streamTrip(t, s, &p, f.fetch, f.fetchAnswer, nil)
	if len(want) < 100 || !bytes.Equal(out, want) {
		t.Fatalf("streamed answer differs from the whole-frame one:\n%x\n%x", out, want)
	}
	n := testing.AllocsPerRun(200, func() { out = streamTrip(t, s, &p, f.fetch, f.fetchAnswer, out) })
	if n != 0 {
		t.Errorf("a streamed Fetch through the session allocates %v per request and answer", n)
	}
}
