// FuzzFetchRequestRewrite and FuzzFetchResponseRewrite: the Fetch request's
// and response's rewriting, and the response's nested unknown tags. Seeds
// and checks are fuzz_test.go's.

package codec

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

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
	f.Fuzz(checkFetchRequestRewrite)
}

// checkFetchRequestRewrite is FuzzFetchRequestRewrite's body: a Fetch
// request the codec accepts is forwarded as a full fetch of acme. topics
// within the gateway's limits, and, when kmsg reads the input, as the input
// renamed.
func checkFetchRequestRewrite(t *testing.T, frame []byte) {
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
	checkFetchRequestFields(t, &h, got, info, lim)
	parts := checkFetchRequestTopics(t, got, info, lim)
	checkFetchRequestDiff(t, &h, body, got, lim, parts)
}

// checkFetchRequestFields: the forwarded request's own fields are the
// gateway's — no replica id, wait and bytes within the limits, a full
// fetch, as many topics as the codec says it kept.
func checkFetchRequestFields(t *testing.T, h *RequestHeader, got *kmsg.FetchRequest, info FetchInfo, lim FetchLimits) {
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
}

// checkFetchRequestTopics: every forwarded topic is an acme. one without
// tags, the partitions are as many as the codec says, and under a quota each
// asks at most its share. It returns the number of partitions forwarded.
func checkFetchRequestTopics(t *testing.T, got *kmsg.FetchRequest, info FetchInfo, lim FetchLimits) int {
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
	return parts
}

// checkFetchRequestDiff: when kmsg reads the input, the output is the input
// with its deny topics left out, the others renamed, their partitions
// unchanged but for a max bytes brought down to the quota's share.
func checkFetchRequestDiff(t *testing.T, h *RequestHeader, body []byte, got *kmsg.FetchRequest, lim FetchLimits, parts int) {
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

	f.Fuzz(checkFetchResponseRewrite)
}

// checkFetchResponseRewrite is FuzzFetchResponseRewrite's body: a Fetch
// answer the codec accepts reaches the client with only the acme. topics,
// renamed, no unknown tags, and, when kmsg reads the input, as the input
// renamed followed by the dropped topics.
func checkFetchResponseRewrite(t *testing.T, ver uint8, withDropped bool, body []byte) {
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

	in, inOK, allowed := fetchResponseInput(v, body, dropped)
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
	checkFetchResponseNames(t, v, got, inOK, allowed)
	if !inOK {
		return
	}
	checkFetchResponseDiff(t, v, in, got, dropped)
}

// fetchResponseInput reads the input as kmsg does: the answer, whether kmsg
// reads it, and the names the client may be answered (the acme. topics
// without their prefix, and the dropped topic).
func fetchResponseInput(v int16, body []byte, dropped *Dropped) (*kmsg.FetchResponse, bool, map[string]bool) {
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
	return in, inOK, allowed
}

// checkFetchResponseNames: the answer carries the gateway's throttle, no
// session, only the names the input allows, none of the other tenant's, and
// no unknown partition tags.
func checkFetchResponseNames(t *testing.T, v int16, got *kmsg.FetchResponse, inOK bool, allowed map[string]bool) {
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
}

// checkFetchResponseDiff is the differential: the acme topics, renamed,
// partitions unchanged but for their unknown tags; then the dropped ones.
func checkFetchResponseDiff(t *testing.T, v int16, in, got *kmsg.FetchResponse, dropped *Dropped) {
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
			checkFetchResponsePartition(t, v, it.Topic, pp, ot.Partitions[i])
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
}

// checkFetchResponsePartition: an answered partition op is the input's pp,
// field by field as far as version v carries them, aborted transactions
// included.
func checkFetchResponsePartition(t *testing.T, v int16, topic string, pp, op kmsg.FetchResponseTopicPartition) {
	if op.Partition != pp.Partition || op.ErrorCode != pp.ErrorCode || op.HighWatermark != pp.HighWatermark ||
		op.LastStableOffset != pp.LastStableOffset || (v >= 5 && op.LogStartOffset != pp.LogStartOffset) ||
		len(op.AbortedTransactions) != len(pp.AbortedTransactions) ||
		(op.AbortedTransactions == nil) != (pp.AbortedTransactions == nil) ||
		(v >= 11 && op.PreferredReadReplica != pp.PreferredReadReplica) ||
		!bytes.Equal(op.RecordBatches, pp.RecordBatches) || (op.RecordBatches == nil) != (pp.RecordBatches == nil) ||
		op.DivergingEpoch.Epoch != pp.DivergingEpoch.Epoch || op.DivergingEpoch.EndOffset != pp.DivergingEpoch.EndOffset ||
		op.CurrentLeader.LeaderID != pp.CurrentLeader.LeaderID || op.CurrentLeader.LeaderEpoch != pp.CurrentLeader.LeaderEpoch ||
		op.SnapshotID.EndOffset != pp.SnapshotID.EndOffset || op.SnapshotID.Epoch != pp.SnapshotID.Epoch {
		t.Fatalf("partition %d of %q changed", pp.Partition, topic)
	}
	for j, a := range pp.AbortedTransactions {
		b := op.AbortedTransactions[j]
		if a.ProducerID != b.ProducerID || a.FirstOffset != b.FirstOffset {
			t.Fatal("aborted transactions changed")
		}
	}
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
