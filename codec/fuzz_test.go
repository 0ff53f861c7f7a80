// The codec's fuzz targets: their invariants, seeds and shared checks. The
// targets are in fuzz_header_test.go, fuzz_produce_test.go and
// fuzz_fetch_test.go.

package codec

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fuzz targets of the codec. Run each one with, e.g.:
//
//	go test ./codec -run '^$' -fuzz '^FuzzProduceRewrite$' -fuzztime 20s
//
// Invariants checked on every input:
//   - nothing panics;
//   - on success, the output frame's size prefix equals its length;
//   - the output re-decodes with kmsg at the same version;
//   - requests: every forwarded topic name is "acme."<name> of a client's
//     name (the judge, prefixJudge, maps every name to acme.<name>, names
//     starting "deny" are refused), the transactional id "acme.~t."<id>;
//   - responses (fed with globex.* topics, the other tenant): every output
//     name is the short name of an acme.* topic of the input, or a dropped
//     topic of the request; none of the other tenant crosses;
//   - memory is bounded: output length <= 2*input + 1 KiB, plus what the
//     judge itself adds to the names it maps (5 bytes of "acme." per
//     forwarded topic: a flexible topic with an empty name is 3 bytes in
//     and 8 out, so the judge alone can exceed any fixed ratio), plus, for
//     responses, the dropped topics the gateway appends.

const (
	fuzzClient = "app-1"
	fuzzCorr   = int32(0x0badf00d)
)

var fuzzClientOut = []byte("acme." + fuzzClient)

// fuzzRecords is a record payload larger than refMin, so that it is referenced.
var fuzzRecords = bytes.Repeat([]byte("rec."), 200)

// --- seeds -----------------------------------------------------------------

func produceSeed(v int16, txn *string, acks int16, topics ...string) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.Version = v
	req.TransactionID = txn
	req.Acks = acks
	req.TimeoutMillis = 1500
	for i, name := range topics {
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = name
		for p := int32(0); p < 2; p++ {
			pp := kmsg.NewProduceRequestTopicPartition()
			pp.Partition = p
			switch {
			case i == 0 && p == 0:
				pp.Records = fuzzRecords
			case p == 1 && i%2 == 1:
				pp.Records = nil // null records
			default:
				pp.Records = []byte{1, 2, 3, byte(i)}
			}
			if v >= 9 && p == 1 {
				pp.UnknownTags.Set(9, []byte("ptag"))
			}
			tp.Partitions = append(tp.Partitions, pp)
		}
		if v >= 9 {
			tp.UnknownTags.Set(7, []byte("ttag"))
		}
		req.Topics = append(req.Topics, tp)
	}
	return frameOf(req, 42, fuzzClient)
}

func fetchRequestSeed(v int16, topics ...string) []byte {
	req := kmsg.NewPtrFetchRequest()
	req.Version = v
	req.ReplicaID = -1
	req.MaxWaitMillis = 500
	req.MinBytes = 1
	req.MaxBytes = 50 << 20
	req.IsolationLevel = 1
	req.SessionID = 12
	req.SessionEpoch = 3
	req.Rack = "rack-a"
	for _, name := range topics {
		tp := kmsg.NewFetchRequestTopic()
		tp.Topic = name
		for p := int32(0); p < 2; p++ {
			pp := kmsg.NewFetchRequestTopicPartition()
			pp.Partition = p
			pp.FetchOffset = 100 + int64(p)
			pp.PartitionMaxBytes = 1 << 20
			pp.CurrentLeaderEpoch = 4
			pp.LastFetchedEpoch = 3
			pp.LogStartOffset = -1
			if v >= 12 {
				pp.UnknownTags.Set(5, []byte("x"))
			}
			tp.Partitions = append(tp.Partitions, pp)
		}
		req.Topics = append(req.Topics, tp)
	}
	ft := kmsg.NewFetchRequestForgottenTopic()
	ft.Topic = "forgotten"
	ft.Partitions = []int32{0, 1}
	req.ForgottenTopics = append(req.ForgottenTopics, ft)
	return frameOf(req, 42, fuzzClient)
}

func fetchResponseSeed(v int16, topics ...string) []byte {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = v
	resp.ThrottleMillis = 5
	resp.SessionID = 77
	for i, name := range topics {
		tp := kmsg.NewFetchResponseTopic()
		tp.Topic = name
		for p := int32(0); p < 2; p++ {
			pp := kmsg.NewFetchResponseTopicPartition()
			pp.Partition = p
			pp.HighWatermark = 10
			pp.LastStableOffset = 9
			pp.LogStartOffset = 0
			pp.PreferredReadReplica = -1
			if p == 0 {
				at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				at.ProducerID, at.FirstOffset = 3, 4
				pp.AbortedTransactions = append(pp.AbortedTransactions, at)
				pp.RecordBatches = fuzzRecords
			} else {
				pp.AbortedTransactions = nil // null
				pp.RecordBatches = []byte("short-" + name)
			}
			if v >= 12 {
				if i == 0 {
					pp.DivergingEpoch.Epoch, pp.DivergingEpoch.EndOffset = 2, 8
					pp.CurrentLeader.LeaderID, pp.CurrentLeader.LeaderEpoch = 1, 2
				}
				pp.UnknownTags.Set(33, []byte("globex-secret"))
			}
			tp.Partitions = append(tp.Partitions, pp)
		}
		resp.Topics = append(resp.Topics, tp)
	}
	return resp.AppendTo(nil)
}

// withHeaderTags re-encodes a flexible request frame's header with a
// non-empty tag section (which the rewriters must drop).
func withHeaderTags(frame []byte) []byte {
	h, err := ParseRequestHeader(frame)
	if err != nil || !h.Flexible {
		return frame
	}
	out := append([]byte(nil), frame[:h.BodyOffset-1]...)
	out = append(out, 1, 3, 2, 'h', 't') // one tag: 3, "ht"
	return append(out, frame[h.BodyOffset:]...)
}

func withNullClient(frame []byte) []byte {
	h, err := ParseRequestHeader(frame)
	if err != nil {
		return frame
	}
	out := append([]byte(nil), frame[:8]...)
	out = append(out, 0xff, 0xff)
	return append(out, frame[10+len(h.ClientID):]...)
}

// --- helpers ---------------------------------------------------------------

// vecFrame closes a Vec and checks its size prefix; it returns the frame
// after the prefix.
func vecFrame(t *testing.T, v *Vec) []byte {
	t.Helper()
	want := v.Len()
	var out []byte
	for _, s := range v.Slices() {
		out = append(out, s...)
	}
	if len(out) < SizeLen {
		t.Fatalf("output of %d bytes has no size prefix", len(out))
	}
	if got := int(FrameSize(out)); got != len(out)-SizeLen {
		t.Fatalf("size prefix %d, frame of %d bytes after it", got, len(out)-SizeLen)
	}
	if want != len(out) {
		t.Fatalf("Vec.Len() = %d, slices hold %d bytes", want, len(out))
	}
	return out[SizeLen:]
}

func checkBound(t *testing.T, in, out, extra int) {
	t.Helper()
	if limit := 2*in + 1024 + extra; out+SizeLen > limit {
		t.Fatalf("output of %d bytes for an input of %d (limit %d)", out+SizeLen, in, limit)
	}
}

func isCodecErr(err error) bool {
	return errors.Is(err, ErrCodecShort) || errors.Is(err, ErrCodecUnknownKey) ||
		errors.Is(err, ErrCodecVersion) || errors.Is(err, ErrCodecTrailing)
}

// checkOutHeader parses a rewritten request's header.
func checkOutHeader(t *testing.T, out []byte, h *RequestHeader) RequestHeader {
	t.Helper()
	h2, err := ParseRequestHeader(out)
	if err != nil {
		t.Fatalf("output header: %v", err)
	}
	if h2.Key != h.Key || h2.Version != h.Version || h2.Correlation != fuzzCorr || h2.Flexible != h.Flexible {
		t.Fatalf("output header %+v for input %+v", h2, *h)
	}
	if h2.ClientNull != h.ClientNull || (!h.ClientNull && !bytes.Equal(h2.ClientID, fuzzClientOut)) {
		t.Fatalf("output client id %q (null %v)", h2.ClientID, h2.ClientNull)
	}
	return h2
}

func acmeName(t *testing.T, what, name string) {
	t.Helper()
	if len(name) < 5 || name[:5] != "acme." {
		t.Fatalf("%s %q forwarded without the acme. prefix", what, name)
	}
}
