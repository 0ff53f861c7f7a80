package codec

import (
	"bytes"
	"encoding/binary"
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

// --- FuzzRequestHeader -----------------------------------------------------

func FuzzRequestHeader(f *testing.F) {
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		req := kmsg.RequestForKey(k)
		if req == nil {
			continue
		}
		for _, v := range []int16{0, req.MaxVersion() / 2, req.MaxVersion()} {
			req.SetVersion(v)
			fr := frameOf(req, int32(k)*1000+int32(v), "client-"+kmsg.NameForKey(k))
			f.Add(fr)
			f.Add(withHeaderTags(fr))
			f.Add(withNullClient(fr))
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 1})                   // no client id length
	f.Add([]byte{0, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0})          // unknown key
	f.Add([]byte{0, 0, 0x7f, 0, 0, 0, 0, 1, 0, 1, 'x'})     // version past kmsg's
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 1, 0xff, 0xfe})       // client id length -2
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0x85, 0x80}) // truncated tag count

	f.Fuzz(func(t *testing.T, frame []byte) {
		h, err := ParseRequestHeader(frame)
		if len(frame) >= 8 {
			if h.Key != int16(binary.BigEndian.Uint16(frame)) || h.Version != int16(binary.BigEndian.Uint16(frame[2:])) ||
				h.Correlation != int32(binary.BigEndian.Uint32(frame[4:])) {
				t.Fatalf("key/version/correlation %+v misread", h)
			}
		}
		if err != nil {
			if !isCodecErr(err) {
				t.Fatalf("unexpected error %v", err)
			}
			if errors.Is(err, ErrCodecUnknownKey) && Known(h.Key) {
				t.Fatalf("known key %d reported unknown", h.Key)
			}
			return
		}
		if !Known(h.Key) {
			t.Fatalf("unknown key %d accepted", h.Key)
		}
		if h.BodyOffset < 10 || h.BodyOffset > len(frame) {
			t.Fatalf("body offset %d in a frame of %d", h.BodyOffset, len(frame))
		}
		if h.ClientNull {
			if h.ClientID != nil || frame[8] != 0xff || frame[9] != 0xff {
				t.Fatalf("null client id misread: %q", h.ClientID)
			}
		} else {
			if !bytes.Equal(h.ClientID, frame[10:10+len(h.ClientID)]) {
				t.Fatal("client id is not the frame's")
			}
			if len(h.ClientID) > 0 && &h.ClientID[0] != &frame[10] {
				t.Fatal("client id copied, not aliased")
			}
			if cap(h.ClientID) != len(h.ClientID) {
				t.Fatal("client id slice may be appended over the frame")
			}
		}
		inRange := h.Version >= 0 && h.Version <= MaxVersion(h.Key)
		if inRange && h.Flexible != RequestFlexible(h.Key, h.Version) {
			t.Fatalf("flexible %v for %d v%d", h.Flexible, h.Key, h.Version)
		}
		if !inRange && h.Flexible {
			t.Fatal("an unknown version read as flexible")
		}
		// The header re-encodes to itself (tags emptied).
		enc := AppendRequestHeader(nil, h.Key, h.Version, h.Correlation, h.ClientID, h.ClientNull, h.Flexible)
		h2, err := ParseRequestHeader(enc)
		if err != nil || h2.Key != h.Key || h2.Version != h.Version || h2.Correlation != h.Correlation ||
			h2.ClientNull != h.ClientNull || !bytes.Equal(h2.ClientID, h.ClientID) || h2.BodyOffset != len(enc) {
			t.Fatalf("re-encoded header %+v %v, was %+v", h2, err, h)
		}
		// decide hands the body of the APIs off the hot path to kmsg: it
		// must not panic on any body the header parser lets through.
		if inRange {
			req := kmsg.RequestForKey(h.Key)
			req.SetVersion(h.Version)
			_ = req.ReadFrom(frame[h.BodyOffset:])
		}
	})
}

// --- FuzzProduceRewrite ----------------------------------------------------

func FuzzProduceRewrite(f *testing.F) {
	tx := "tx-1"
	for v := int16(0); v <= 12; v++ {
		var txn *string
		if v >= 3 && v%2 == 1 {
			txn = &tx
		}
		fr := produceSeed(v, txn, -1, "orders", "deny-me", "globex.orders", "")
		f.Add(fr)
		if v == 0 || v == 3 || v == 7 || v == 9 || v == 12 {
			f.Add(produceSeed(v, nil, 0, "orders"))
			f.Add(produceSeed(v, txn, 1))
			f.Add(withHeaderTags(fr))
			f.Add(withNullClient(fr))
			f.Add(fr[:len(fr)-3])                        // truncated
			f.Add(append(append([]byte(nil), fr...), 0)) // trailing byte
		}
	}
	// A produce of version 13 (topic ids): refused by version.
	req := kmsg.NewPtrProduceRequest()
	req.Version = 13
	f.Add(frameOf(req, 1, "c"))

	f.Fuzz(func(t *testing.T, frame []byte) {
		h, err := ParseRequestHeader(frame)
		if err != nil || h.Key != 0 {
			return
		}
		var w Rewriter
		body := frame[h.BodyOffset:]
		info, err := w.Produce(&h, fuzzCorr, fuzzClientOut, body, &prefixJudge{})
		if err != nil {
			if !isCodecErr(err) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if h.Version > 12 {
			t.Fatalf("v%d accepted", h.Version)
		}
		out := vecFrame(t, &w.Vec)
		checkBound(t, len(frame), len(out), 5*info.Kept)
		h2 := checkOutHeader(t, out, &h)

		got := kmsg.NewPtrProduceRequest()
		got.Version = h.Version
		if err := got.ReadFrom(out[h2.BodyOffset:]); err != nil {
			t.Fatalf("v%d: output does not decode: %v", h.Version, err)
		}
		if len(got.Topics) != info.Kept {
			t.Fatalf("%d topics forwarded, info says %d", len(got.Topics), info.Kept)
		}
		if got.TransactionID != nil {
			if !info.Transactional || len(*got.TransactionID) < 8 || (*got.TransactionID)[:8] != "acme.~t." {
				t.Fatalf("transactional id %q forwarded", *got.TransactionID)
			}
		} else if info.Transactional {
			t.Fatal("transactional id lost")
		}
		bytesOut := 0
		for _, tp := range got.Topics {
			acmeName(t, "topic", tp.Topic)
			for _, pp := range tp.Partitions {
				bytesOut += len(pp.Records)
				if pp.UnknownTags.Len() != 0 {
					t.Fatal("partition tags crossed")
				}
			}
			if tp.UnknownTags.Len() != 0 {
				t.Fatal("topic tags crossed")
			}
		}
		if got.UnknownTags.Len() != 0 {
			t.Fatal("request tags crossed")
		}
		if bytesOut != info.Bytes {
			t.Fatalf("info.Bytes %d, %d record bytes forwarded", info.Bytes, bytesOut)
		}
		for _, d := range w.Dropped.Topics {
			if !bytes.HasPrefix(d.Name, []byte("deny")) || d.Code == 0 {
				t.Fatalf("topic %q dropped with code %d", d.Name, d.Code)
			}
		}

		// Differential: when kmsg reads the input, the output is the input
		// renamed, its records untouched, refused topics in Dropped.
		in := kmsg.NewPtrProduceRequest()
		in.Version = h.Version
		if in.ReadFrom(body) != nil {
			return
		}
		if info.Acks != in.Acks || got.Acks != in.Acks || got.TimeoutMillis != in.TimeoutMillis {
			t.Fatal("acks or timeout changed")
		}
		if (in.TransactionID == nil) != (got.TransactionID == nil) ||
			(in.TransactionID != nil && *got.TransactionID != "acme.~t."+*in.TransactionID) {
			t.Fatal("transactional id not mapped")
		}
		k, d := 0, 0
		for _, it := range in.Topics {
			if len(it.Topic) >= 4 && it.Topic[:4] == "deny" {
				dt := w.Dropped.Topics[d]
				d++
				if string(dt.Name) != it.Topic || len(dt.Partitions) != len(it.Partitions) {
					t.Fatalf("dropped %q as %q", it.Topic, dt.Name)
				}
				for i, pp := range it.Partitions {
					if dt.Partitions[i] != pp.Partition {
						t.Fatal("dropped partitions wrong")
					}
				}
				continue
			}
			ot := got.Topics[k]
			k++
			if ot.Topic != "acme."+it.Topic || len(ot.Partitions) != len(it.Partitions) {
				t.Fatalf("topic %q forwarded as %q", it.Topic, ot.Topic)
			}
			for i, pp := range it.Partitions {
				op := ot.Partitions[i]
				if op.Partition != pp.Partition || !bytes.Equal(op.Records, pp.Records) || (op.Records == nil) != (pp.Records == nil) {
					t.Fatalf("partition %d of %q changed", pp.Partition, it.Topic)
				}
			}
		}
		if k != len(got.Topics) || d != len(w.Dropped.Topics) {
			t.Fatal("topics forwarded or dropped that the input does not hold")
		}
	})
}

// --- FuzzFetchRequestRewrite -----------------------------------------------

func FuzzFetchRequestRewrite(f *testing.F) {
	for v := int16(4); v <= 12; v++ {
		fr := fetchRequestSeed(v, "orders", "deny-x", "globex.orders")
		f.Add(fr)
		if v == 4 || v == 7 || v == 11 || v == 12 {
			f.Add(fetchRequestSeed(v))
			f.Add(withHeaderTags(fr))
			f.Add(withNullClient(fr))
			f.Add(fr[:len(fr)-2])
			f.Add(append(append([]byte(nil), fr...), 0))
		}
	}
	for _, v := range []int16{0, 3, 13, 16} { // refused by version
		req := kmsg.NewPtrFetchRequest()
		req.Version = v
		f.Add(frameOf(req, 1, "c"))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, err := ParseRequestHeader(frame)
		if err != nil || h.Key != 1 {
			return
		}
		// Half the inputs under a quota's allowance (issue 22.2), by the
		// frame's length: each partition's share of it, at most.
		lim := FetchLimits{MaxWaitMs: 30000, MaxBytes: 1 << 20}
		if len(frame)%2 == 1 {
			lim.QuotaBytes = 256 << 10
		}
		var w Rewriter
		body := frame[h.BodyOffset:]
		info, err := w.FetchRequest(&h, fuzzCorr, fuzzClientOut, body, &prefixJudge{}, lim)
		if err != nil {
			if !isCodecErr(err) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if h.Version < 4 || h.Version > 12 {
			t.Fatalf("v%d accepted", h.Version)
		}
		out := vecFrame(t, &w.Vec)
		checkBound(t, len(frame), len(out), 5*info.Kept)
		h2 := checkOutHeader(t, out, &h)

		got := kmsg.NewPtrFetchRequest()
		got.Version = h.Version
		if err := got.ReadFrom(out[h2.BodyOffset:]); err != nil {
			t.Fatalf("v%d: output does not decode: %v", h.Version, err)
		}
		if got.ReplicaID != -1 {
			t.Fatalf("replica id %d forwarded", got.ReplicaID)
		}
		if got.MaxWaitMillis < 0 || got.MaxWaitMillis > lim.MaxWaitMs {
			t.Fatalf("max wait %d forwarded", got.MaxWaitMillis)
		}
		if got.MaxBytes <= 0 || got.MaxBytes > lim.MaxBytes || got.MaxBytes != info.MaxBytes || got.MinBytes > got.MaxBytes {
			t.Fatalf("bytes %d..%d forwarded (info %d)", got.MinBytes, got.MaxBytes, info.MaxBytes)
		}
		if h.Version >= 7 && (got.SessionID != 0 || got.SessionEpoch != -1 || len(got.ForgottenTopics) != 0) {
			t.Fatalf("not a full fetch: session %d epoch %d", got.SessionID, got.SessionEpoch)
		}
		if len(got.Topics) != info.Kept {
			t.Fatalf("%d topics forwarded, info says %d", len(got.Topics), info.Kept)
		}
		parts := 0
		for _, tp := range got.Topics {
			acmeName(t, "topic", tp.Topic)
			parts += len(tp.Partitions)
			if tp.UnknownTags.Len() != 0 {
				t.Fatal("topic tags crossed")
			}
			for _, pp := range tp.Partitions {
				if pp.UnknownTags.Len() != 0 {
					t.Fatal("partition tags crossed")
				}
			}
		}
		if parts != info.Partitions {
			t.Fatalf("%d partitions forwarded, info says %d", parts, info.Partitions)
		}
		if lim.QuotaBytes > 0 && parts > 0 {
			share := max(lim.QuotaBytes/int32(parts), 1)
			for _, tp := range got.Topics {
				for _, pp := range tp.Partitions {
					if pp.PartitionMaxBytes <= 0 || pp.PartitionMaxBytes > share {
						t.Fatalf("partition_max_bytes %d forwarded under a share of %d", pp.PartitionMaxBytes, share)
					}
				}
			}
			if got.MinBytes > share*int32(parts) {
				t.Fatalf("min_bytes %d above the shares' %d", got.MinBytes, share*int32(parts))
			}
		}

		in := kmsg.NewPtrFetchRequest()
		in.Version = h.Version
		if in.ReadFrom(body) != nil {
			return
		}
		if got.IsolationLevel != in.IsolationLevel || (h.Version >= 11 && got.Rack != in.Rack) {
			t.Fatal("isolation level or rack changed")
		}
		k := 0
		for _, it := range in.Topics {
			if len(it.Topic) >= 4 && it.Topic[:4] == "deny" {
				continue
			}
			ot := got.Topics[k]
			k++
			if ot.Topic != "acme."+it.Topic || len(ot.Partitions) != len(it.Partitions) {
				t.Fatalf("topic %q forwarded as %q", it.Topic, ot.Topic)
			}
			for i, pp := range it.Partitions {
				op := ot.Partitions[i]
				wantMax := pp.PartitionMaxBytes // as sent, or brought down to its share
				if share := max(lim.QuotaBytes/int32(max(parts, 1)), 1); lim.QuotaBytes > 0 && (wantMax > share || wantMax <= 0) {
					wantMax = share
				}
				if op.Partition != pp.Partition || op.FetchOffset != pp.FetchOffset ||
					op.PartitionMaxBytes != wantMax || op.CurrentLeaderEpoch != pp.CurrentLeaderEpoch ||
					op.LastFetchedEpoch != pp.LastFetchedEpoch || op.LogStartOffset != pp.LogStartOffset {
					t.Fatalf("partition %+v forwarded as %+v", pp, op)
				}
			}
		}
		if k != len(got.Topics) {
			t.Fatal("topics forwarded that the input does not hold")
		}
	})
}

// --- FuzzFetchResponseRewrite ----------------------------------------------

func FuzzFetchResponseRewrite(f *testing.F) {
	for v := int16(4); v <= 12; v++ {
		body := fetchResponseSeed(v, "acme.orders", "globex.orders", "globex.acme.orders", "orders")
		f.Add(uint8(v), false, body)
		f.Add(uint8(v), true, body)
		if v == 4 || v == 7 || v == 11 || v == 12 {
			f.Add(uint8(v), true, fetchResponseSeed(v))
			f.Add(uint8(v), false, fetchResponseSeed(v, "globex.payments"))
			f.Add(uint8(v), false, body[:len(body)-1])
			f.Add(uint8(v), false, append(append([]byte(nil), body...), 0))
		}
	}
	f.Add(uint8(3), false, fetchResponseSeed(4, "acme.orders"))
	f.Add(uint8(13), false, fetchResponseSeed(12, "acme.orders"))

	f.Fuzz(func(t *testing.T, ver uint8, withDropped bool, body []byte) {
		v := int16(ver % 16)
		var dropped *Dropped
		extra := 0
		if withDropped {
			dropped = &Dropped{}
			dt := dropped.add([]byte("deny-x"), 29)
			dt.Partitions = []int32{0, 1, 2}
			extra = 256 // the dropped topic, encoded
		}
		var w Rewriter
		err := w.FetchResponse(v, fuzzCorr, body, &prefixJudge{}, dropped, 100)
		if err != nil {
			if !isCodecErr(err) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if v < 4 || v > 12 {
			t.Fatalf("v%d accepted", v)
		}
		out := vecFrame(t, &w.Vec)
		checkBound(t, len(body), len(out), extra)
		corr, rb, err := ParseResponseHeader(out, 1, v)
		if err != nil || corr != fuzzCorr {
			t.Fatalf("response header: corr %d, %v", corr, err)
		}

		// The names of the input, and whether kmsg reads it.
		in := kmsg.NewPtrFetchResponse()
		in.Version = v
		inOK := in.ReadFrom(body) == nil
		allowed := map[string]bool{}
		if dropped != nil {
			allowed["deny-x"] = true
		}
		if inOK {
			for _, it := range in.Topics {
				if len(it.Topic) >= 5 && it.Topic[:5] == "acme." {
					allowed[it.Topic[5:]] = true
				}
			}
		}

		got := kmsg.NewPtrFetchResponse()
		got.Version = v
		if err := got.ReadFrom(rb); err != nil {
			if inOK {
				t.Fatalf("v%d: output does not decode: %v", v, err)
			}
			// The codec copies the known tags (0-2) of a v12 partition
			// as they are: garbage there, unreadable in the input too,
			// stays unreadable. Names are still checked below on the raw
			// bytes.
			if bytes.Contains(out, []byte("globex")) && !bytes.Contains(body, []byte("acme.")) {
				t.Fatal("globex bytes crossed from an input without acme. topics")
			}
			return
		}
		if got.ThrottleMillis < 100 {
			t.Fatalf("throttle %d", got.ThrottleMillis)
		}
		if v >= 7 && got.SessionID != 0 {
			t.Fatalf("session id %d crossed", got.SessionID)
		}
		for _, ot := range got.Topics {
			if inOK && !allowed[ot.Topic] {
				t.Fatalf("topic %q answered, not an acme. topic of the input", ot.Topic)
			}
			if bytes.Contains([]byte(ot.Topic), []byte("globex")) && !allowed[ot.Topic] {
				t.Fatalf("the other tenant's topic %q crossed", ot.Topic)
			}
			for _, pp := range ot.Partitions {
				if pp.UnknownTags.Len() != 0 {
					t.Fatalf("unknown tags crossed: %v", pp.UnknownTags)
				}
			}
		}
		if !inOK {
			return
		}
		// Differential: the acme topics, renamed, partitions unchanged but
		// for their unknown tags; then the dropped ones.
		k := 0
		for _, it := range in.Topics {
			if len(it.Topic) < 5 || it.Topic[:5] != "acme." {
				continue
			}
			ot := got.Topics[k]
			k++
			if ot.Topic != it.Topic[5:] || len(ot.Partitions) != len(it.Partitions) {
				t.Fatalf("topic %q answered as %q", it.Topic, ot.Topic)
			}
			for i, pp := range it.Partitions {
				op := ot.Partitions[i]
				if op.Partition != pp.Partition || op.ErrorCode != pp.ErrorCode || op.HighWatermark != pp.HighWatermark ||
					op.LastStableOffset != pp.LastStableOffset || (v >= 5 && op.LogStartOffset != pp.LogStartOffset) ||
					len(op.AbortedTransactions) != len(pp.AbortedTransactions) ||
					(op.AbortedTransactions == nil) != (pp.AbortedTransactions == nil) ||
					(v >= 11 && op.PreferredReadReplica != pp.PreferredReadReplica) ||
					!bytes.Equal(op.RecordBatches, pp.RecordBatches) || (op.RecordBatches == nil) != (pp.RecordBatches == nil) ||
					op.DivergingEpoch.Epoch != pp.DivergingEpoch.Epoch || op.DivergingEpoch.EndOffset != pp.DivergingEpoch.EndOffset ||
					op.CurrentLeader.LeaderID != pp.CurrentLeader.LeaderID || op.CurrentLeader.LeaderEpoch != pp.CurrentLeader.LeaderEpoch ||
					op.SnapshotID.EndOffset != pp.SnapshotID.EndOffset || op.SnapshotID.Epoch != pp.SnapshotID.Epoch {
					t.Fatalf("partition %d of %q changed", pp.Partition, it.Topic)
				}
				for j, a := range pp.AbortedTransactions {
					b := op.AbortedTransactions[j]
					if a.ProducerID != b.ProducerID || a.FirstOffset != b.FirstOffset {
						t.Fatal("aborted transactions changed")
					}
				}
			}
		}
		if dropped != nil {
			if k >= len(got.Topics) || got.Topics[k].Topic != "deny-x" || len(got.Topics[k].Partitions) != 3 ||
				got.Topics[k].Partitions[2].ErrorCode != 29 {
				t.Fatal("dropped topic not answered")
			}
			k++
		}
		if k != len(got.Topics) {
			t.Fatal("topics answered that the input does not hold")
		}
	})
}

// D9: a v12 Fetch response partition's known tags (0 diverging epoch,
// 1 current leader, 2 snapshot id) are re-encoded without the unknown tags
// nested in those structures.
func TestFetchResponseNestedUnknownTags(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	tp := kmsg.NewFetchResponseTopic()
	tp.Topic = "acme.orders"
	pp := kmsg.NewFetchResponseTopicPartition()
	pp.DivergingEpoch.Epoch = 1
	pp.DivergingEpoch.UnknownTags.Set(44, []byte("nested-secret"))
	tp.Partitions = append(tp.Partitions, pp)
	resp.Topics = append(resp.Topics, tp)
	var w Rewriter
	if err := w.FetchResponse(12, 1, resp.AppendTo(nil), &prefixJudge{}, nil, 0); err != nil {
		t.Fatal(err)
	}
	if out := vecFrame(t, &w.Vec); bytes.Contains(out, []byte("nested-secret")) {
		t.Fatal("an unknown tag nested in a known tag of a Fetch response partition crosses to the client")
	}
}
