package decide

import (
	"bytes"
	"errors"
	"testing"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func produceFrame(v, acks int16, txn *string, topics ...string) []byte {
	r := kmsg.NewPtrProduceRequest()
	r.Version, r.Acks, r.TimeoutMillis, r.TransactionID = v, acks, 1000, txn
	for _, name := range topics {
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = name
		for i := int32(0); i < 3; i++ {
			pp := kmsg.NewProduceRequestTopicPartition()
			pp.Partition = i
			pp.Records = bytes.Repeat([]byte{byte(i + 1)}, 20<<10)
			tp.Partitions = append(tp.Partitions, pp)
		}
		r.Topics = append(r.Topics, tp)
	}
	return reqFrame(r, 11, "app-1")
}

// produceStreamTrip begins the stream from the frame's first 200 bytes
// and feeds it in pieces of 1000 bytes; out (reused) collects the frame
// for the broker.
func produceStreamTrip(tb testing.TB, s *Session, p *Pending, frame, out []byte) ([]byte, error) {
	h, err := codec.ParseRequestHeader(frame[:200])
	if err != nil {
		tb.Fatal(err)
	}
	ps, err := s.ProduceStream(&h, frame[:200], len(frame), 5, p)
	if err != nil {
		return nil, err
	}
	out = out[:0]
	for pos, recv := 0, 0; !ps.Done(); {
		recv = min(len(frame), recv+1000)
		n, err := ps.Feed(frame[pos:recv])
		if err != nil {
			tb.Fatal(err)
		}
		pos += n
		for _, sl := range ps.Slices() {
			out = append(out, sl...)
		}
	}
	return out, nil
}

// Issue 11.1: a one-topic Produce the view allows is streamed, the same
// bytes as Request forwards, its Pending ready for the answer, without an
// allocation; what the whole-frame path refuses or splits is not streamed.
func TestSessionProduceStream(t *testing.T) {
	s := fuzzSession(t, false)
	var p Pending
	for _, acks := range []int16{-1, 0} {
		frame := produceFrame(9, acks, nil, "orders")
		h, _ := codec.ParseRequestHeader(frame)
		if out := s.Request(&h, frame, 5, testGrant, &p); out != Forward {
			t.Fatalf("outcome %d (%s)", out, p.Cause)
		}
		var want []byte
		for _, sl := range s.RW.Vec.Slices() {
			want = append(want, sl...)
		}
		p = Pending{}
		got, err := produceStreamTrip(t, s, &p, frame, nil)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("acks=%d: %v, same bytes %v", acks, err, bytes.Equal(got, want))
		}
		if p.Key != codec.KeyProduce || p.Version != 9 || p.ClientCorr != 11 || p.UpCorr != 5 || p.NoResponse != (acks == 0) || p.Reserve != AnswerReserve || p.Dropped.Len() != 0 {
			t.Fatalf("pending %+v", p)
		}
		n := testing.AllocsPerRun(100, func() { got, _ = produceStreamTrip(t, s, &p, frame, got) })
		if n != 0 {
			t.Errorf("acks=%d: a streamed Produce allocates %v per request", acks, n)
		}
	}
	tx := "tx-1"
	for name, frame := range map[string][]byte{
		"a refused topic":                   produceFrame(9, -1, nil, "audit"),
		"an unknown topic":                  produceFrame(9, -1, nil, "unknown"),
		"two topics":                        produceFrame(9, -1, nil, "orders", "orders"),
		"transactional without transaction": produceFrame(9, -1, &tx, "orders"),
		"a version not announced":           produceFrame(13, -1, nil, "orders")[:300],
	} {
		if _, err := produceStreamTrip(t, s, &p, frame, nil); !errors.Is(err, codec.ErrCodecNotStreamed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := produceStreamTrip(t, fuzzSession(t, true), &p, produceFrame(9, -1, &tx, "orders"), nil); err != nil {
		t.Errorf("transactional session: %v", err)
	}
}

// Over the fuzz seeds' Produce requests (versions, acks, transactional
// ids, refused and unknown topics, in sessions with and without
// transactions): whatever ProduceStream streams, Request forwards, the
// same bytes, the same Pending; what it does not, it does not.
func TestSessionProduceStreamAgreesWithRequest(t *testing.T) {
	streamed := 0
	for _, txn := range []bool{false, true} {
		s := fuzzSession(t, txn)
		for _, frame := range servedSeeds() {
			h, err := codec.ParseRequestHeader(frame)
			if err != nil || h.Key != codec.KeyProduce {
				continue
			}
			var ps, pw Pending
			st, serr := s.ProduceStream(&h, frame, len(frame), 9, &ps)
			var got []byte
			if serr == nil {
				for !st.Done() {
					n, err := st.Feed(frame[len(frame)-st.Remaining():])
					if err != nil {
						t.Fatalf("v%d: %v", h.Version, err)
					}
					if n == 0 {
						t.Fatal("stalled")
					}
					for _, sl := range st.Slices() {
						got = append(got, sl...)
					}
				}
			}
			out := s.Request(&h, frame, 9, testGrant, &pw)
			if serr != nil {
				if !errors.Is(serr, codec.ErrCodecNotStreamed) {
					t.Fatalf("v%d: %v", h.Version, serr)
				}
				continue
			}
			streamed++
			var want []byte
			for _, sl := range s.RW.Vec.Slices() {
				want = append(want, sl...)
			}
			if out != Forward || pw.Dropped.Len() != 0 || !bytes.Equal(got, want) {
				t.Fatalf("v%d: streamed, but Request says %d (%s), %d dropped, same bytes %v", h.Version, out, pw.Cause, pw.Dropped.Len(), bytes.Equal(got, want))
			}
			if ps.NoResponse != pw.NoResponse || ps.Reserve != pw.Reserve || ps.UpCorr != pw.UpCorr || ps.ClientCorr != pw.ClientCorr || ps.Version != pw.Version {
				t.Fatalf("v%d: pending %+v, Request's %+v", h.Version, ps, pw)
			}
		}
	}
	if streamed < 10 {
		t.Fatalf("only %d seeds streamed", streamed)
	}
}
