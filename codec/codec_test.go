package codec

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// prefixJudge maps "x" to "acme.x"; topics named "deny*" are refused.
type prefixJudge struct{ buf []byte }

func (j *prefixJudge) ProduceTopic(n []byte) ([]byte, int16) {
	if bytes.HasPrefix(n, []byte("deny")) {
		return nil, kerr.TopicAuthorizationFailed.Code
	}
	// A fresh slice each time: a judge's answers must stay valid until the rewrite returns.
	return append([]byte("acme."), n...), 0
}
func (j *prefixJudge) FetchTopic(n []byte) ([]byte, int16) { return j.ProduceTopic(n) }
func (j *prefixJudge) TxnID(id []byte) []byte {
	return append([]byte("acme.~t."), id...)
}
func (j *prefixJudge) ClientTopic(p []byte) ([]byte, bool) {
	if !bytes.HasPrefix(p, []byte("acme.")) {
		return nil, false
	}
	return p[5:], true
}

// frameOf encodes a request as the client sends it (size prefix stripped).
func frameOf(req kmsg.Request, corr int32, client string) []byte {
	var f []byte
	f = AppendRequestHeader(f, req.Key(), req.GetVersion(), corr, []byte(client), false, req.IsFlexible())
	return req.AppendTo(f)
}

func joined(v *Vec) []byte {
	out := vecBytes(v)
	if int(FrameSize(out)) != len(out)-4 {
		panic("bad size prefix")
	}
	return out[4:]
}

func TestProduceRewriteAllVersions(t *testing.T) {
	recs := bytes.Repeat([]byte{7}, 2000) // larger than refMin: referenced
	for v := int16(3); v <= 12; v++ {
		req := kmsg.NewPtrProduceRequest()
		req.Version = v
		tx := "tx"
		req.TransactionID = &tx
		req.Acks = -1
		req.TimeoutMillis = 1234
		for _, name := range []string{"orders", "deny-me", "small"} {
			tp := kmsg.NewProduceRequestTopic()
			tp.Topic = name
			for p := int32(0); p < 2; p++ {
				pp := kmsg.NewProduceRequestTopicPartition()
				pp.Partition = p
				if name == "small" {
					pp.Records = []byte{1, 2, 3}
				} else {
					pp.Records = recs
				}
				tp.Partitions = append(tp.Partitions, pp)
			}
			req.Topics = append(req.Topics, tp)
		}
		frame := frameOf(req, 42, "app-1")
		h, err := ParseRequestHeader(frame)
		if err != nil || h.Key != 0 || h.Version != v || h.Correlation != 42 || string(h.ClientID) != "app-1" {
			t.Fatalf("v%d header: %+v %v", v, h, err)
		}
		var w Rewriter
		info, err := w.Produce(&h, 7, []byte("acme.app-1"), frame[h.BodyOffset:], &prefixJudge{})
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if info.Acks != -1 || info.Kept != 2 || !info.Transactional {
			t.Fatalf("v%d info %+v", v, info)
		}
		out := joined(&w.Vec)
		h2, err := ParseRequestHeader(out)
		if err != nil || h2.Correlation != 7 || string(h2.ClientID) != "acme.app-1" {
			t.Fatalf("v%d out header %+v %v", v, h2, err)
		}
		got := kmsg.NewPtrProduceRequest()
		got.Version = v
		if err := got.ReadFrom(out[h2.BodyOffset:]); err != nil {
			t.Fatalf("v%d decode: %v", v, err)
		}
		if *got.TransactionID != "acme.~t.tx" || got.TimeoutMillis != 1234 || len(got.Topics) != 2 ||
			got.Topics[0].Topic != "acme.orders" || got.Topics[1].Topic != "acme.small" ||
			!bytes.Equal(got.Topics[0].Partitions[1].Records, recs) || !bytes.Equal(got.Topics[1].Partitions[0].Records, []byte{1, 2, 3}) {
			t.Fatalf("v%d rewritten wrong", v)
		}
		if w.Dropped.Len() != 1 || string(w.Dropped.Topics[0].Name) != "deny-me" || len(w.Dropped.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d dropped %+v", v, w.Dropped)
		}
	}
}

// The records of a forwarded Produce are the client's bytes, not a copy (D4).
func TestProduceRecordsNotCopied(t *testing.T) {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = 1
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "orders"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = bytes.Repeat([]byte{9}, 4096)
	tp.Partitions = append(tp.Partitions, pp)
	req.Topics = append(req.Topics, tp)
	frame := frameOf(req, 1, "c")
	h, _ := ParseRequestHeader(frame)
	var w Rewriter
	if _, err := w.Produce(&h, 1, nil, frame[h.BodyOffset:], &prefixJudge{}); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range w.Vec.Slices() {
		for i := range frame {
			if len(s) == 4096 && &s[0] == &frame[i] {
				found = true
			}
		}
	}
	if !found {
		t.Fatal("records were copied, not referenced")
	}
}

func TestFetchRequestRewriteAllVersions(t *testing.T) {
	for v := int16(4); v <= 12; v++ {
		req := kmsg.NewPtrFetchRequest()
		req.Version = v
		req.ReplicaID = 3 // a replica's request is relayed as a consumer's
		req.MaxWaitMillis = 60000
		req.MinBytes = 1
		req.MaxBytes = 100 << 20
		req.IsolationLevel = 1
		req.SessionID = 99
		req.SessionEpoch = 4
		req.Rack = "r1"
		for _, name := range []string{"orders", "deny"} {
			tp := kmsg.NewFetchRequestTopic()
			tp.Topic = name
			pp := kmsg.NewFetchRequestTopicPartition()
			pp.Partition = 2
			pp.FetchOffset = 77
			pp.PartitionMaxBytes = 1 << 20
			pp.CurrentLeaderEpoch = 5
			pp.LogStartOffset = 3
			tp.Partitions = append(tp.Partitions, pp)
			req.Topics = append(req.Topics, tp)
		}
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic = "old"
		ft.Partitions = []int32{1}
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
		frame := frameOf(req, 5, "c")
		h, _ := ParseRequestHeader(frame)
		var w Rewriter
		info, err := w.FetchRequest(&h, 9, []byte("acme.c"), frame[h.BodyOffset:], &prefixJudge{}, FetchLimits{MaxWaitMs: 30000, MaxBytes: 32 << 20})
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		out := joined(&w.Vec)
		h2, _ := ParseRequestHeader(out)
		got := kmsg.NewPtrFetchRequest()
		got.Version = v
		if err := got.ReadFrom(out[h2.BodyOffset:]); err != nil {
			t.Fatalf("v%d decode: %v", v, err)
		}
		if got.ReplicaID != -1 || got.MaxWaitMillis != 30000 || got.MaxBytes != 32<<20 || info.MaxBytes != 32<<20 ||
			len(got.Topics) != 1 || got.Topics[0].Topic != "acme.orders" || got.Topics[0].Partitions[0].FetchOffset != 77 ||
			got.IsolationLevel != 1 {
			t.Fatalf("v%d rewritten wrong", v)
		}
		if v >= 7 && (got.SessionID != 0 || got.SessionEpoch != -1 || len(got.ForgottenTopics) != 0) {
			t.Fatalf("v%d not a full fetch: %+v", v, got)
		}
		if v >= 9 && got.Topics[0].Partitions[0].CurrentLeaderEpoch != 5 {
			t.Fatalf("v%d leader epoch lost", v)
		}
		if v >= 11 && got.Rack != "r1" {
			t.Fatalf("v%d rack lost", v)
		}
		if w.Dropped.Len() != 1 {
			t.Fatalf("v%d dropped %+v", v, w.Dropped)
		}
	}
}

// Issue 22.2: what the quotas allow a Fetch's answer is split evenly over
// the partitions forwarded, each partition_max_bytes brought down to its
// share (never raised), the response bound left as the budget set it, the
// long poll's min_bytes no more than the shares; every version.
func TestFetchRequestQuotaBytesSplit(t *testing.T) {
	for v := int16(4); v <= 12; v++ {
		req := kmsg.NewPtrFetchRequest()
		req.Version = v
		req.MinBytes = 1 << 20
		req.MaxBytes = 50 << 20
		tp := kmsg.NewFetchRequestTopic()
		tp.Topic = "orders"
		for p, max := range []int32{1 << 20, 10 << 10, 0, 1 << 20} {
			pp := kmsg.NewFetchRequestTopicPartition()
			pp.Partition, pp.PartitionMaxBytes, pp.LogStartOffset = int32(p), max, 7
			tp.Partitions = append(tp.Partitions, pp)
		}
		req.Topics = append(req.Topics, tp)
		frame := frameOf(req, 5, "c")
		h, _ := ParseRequestHeader(frame)
		var w Rewriter
		if _, err := w.FetchRequest(&h, 9, []byte("acme.c"), frame[h.BodyOffset:], &prefixJudge{}, FetchLimits{MaxBytes: 32 << 20, QuotaBytes: 200 << 10}); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		out := joined(&w.Vec)
		h2, _ := ParseRequestHeader(out)
		got := kmsg.NewPtrFetchRequest()
		got.Version = v
		if err := got.ReadFrom(out[h2.BodyOffset:]); err != nil {
			t.Fatalf("v%d decode: %v", v, err)
		}
		var maxes []int32
		for _, pp := range got.Topics[0].Partitions {
			maxes = append(maxes, pp.PartitionMaxBytes)
			if v >= 5 && pp.LogStartOffset != 7 {
				t.Fatalf("v%d: the partition's other fields moved: %+v", v, pp)
			}
		}
		const share = 200 << 10 / 4
		if want := []int32{share, 10 << 10, share, share}; !slices.Equal(maxes, want) {
			t.Fatalf("v%d: partition_max_bytes %v, want %v", v, maxes, want)
		}
		if got.MaxBytes != 32<<20 || got.MinBytes != 4*share {
			t.Fatalf("v%d: max_bytes %d, min_bytes %d: want the budget's 32 MiB and the shares' %d", v, got.MaxBytes, got.MinBytes, 4*share)
		}
	}
}

func TestFetchResponseRewriteAllVersions(t *testing.T) {
	recs := bytes.Repeat([]byte{5}, 3000)
	for v := int16(4); v <= 12; v++ {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = v
		resp.ThrottleMillis = 10
		resp.SessionID = 1234
		for _, name := range []string{"acme.orders", "globex.orders"} {
			tp := kmsg.NewFetchResponseTopic()
			tp.Topic = name
			pp := kmsg.NewFetchResponseTopicPartition()
			pp.Partition = 1
			pp.HighWatermark = 100
			pp.LastStableOffset = 90
			pp.LogStartOffset = 0
			pp.PreferredReadReplica = -1
			at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			at.ProducerID = 8
			at.FirstOffset = 9
			pp.AbortedTransactions = append(pp.AbortedTransactions, at)
			pp.RecordBatches = recs
			if v >= 12 {
				pp.DivergingEpoch.Epoch = 3
				pp.DivergingEpoch.EndOffset = 4
				pp.UnknownTags.Set(40, []byte("secret"))
			}
			tp.Partitions = append(tp.Partitions, pp)
			resp.Topics = append(resp.Topics, tp)
		}
		body := resp.AppendTo(nil)
		var w Rewriter
		d := Dropped{}
		d.add([]byte("deny"), kerr.TopicAuthorizationFailed.Code).Partitions = []int32{0, 1}
		if err := w.FetchResponse(v, 77, body, &prefixJudge{}, &d, 500); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		out := joined(&w.Vec)
		corr, rb, err := ParseResponseHeader(out, 1, v)
		if err != nil || corr != 77 {
			t.Fatalf("v%d header %d %v", v, corr, err)
		}
		got := kmsg.NewPtrFetchResponse()
		got.Version = v
		if err := got.ReadFrom(rb); err != nil {
			t.Fatalf("v%d decode: %v", v, err)
		}
		if got.ThrottleMillis != 500 || len(got.Topics) != 2 || got.Topics[0].Topic != "orders" ||
			!bytes.Equal(got.Topics[0].Partitions[0].RecordBatches, recs) ||
			got.Topics[0].Partitions[0].AbortedTransactions[0].ProducerID != 8 ||
			got.Topics[1].Topic != "deny" || got.Topics[1].Partitions[1].ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("v%d rewritten wrong", v)
		}
		if v >= 7 && got.SessionID != 0 {
			t.Fatalf("v%d session id crossed", v)
		}
		if v >= 12 {
			p := got.Topics[0].Partitions[0]
			if p.DivergingEpoch.Epoch != 3 || p.UnknownTags.Len() != 0 {
				t.Fatalf("v%d tags: %+v", v, p)
			}
		}
		if strings.Contains(string(out), "globex") || strings.Contains(string(out), "secret") {
			t.Fatalf("v%d: a foreign name or unknown tag crossed", v)
		}
	}
}

func TestLooksLikeTLS(t *testing.T) {
	if !LooksLikeTLS(0x16030301) || !LooksLikeTLS(0x16030100) || LooksLikeTLS(1000) {
		t.Fatal("TLS detection")
	}
}

// The hot path allocates nothing in steady state.
func TestRewriteAllocs(t *testing.T) {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = -1
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "orders"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = bytes.Repeat([]byte{1}, 16384)
	tp.Partitions = append(tp.Partitions, pp)
	req.Topics = append(req.Topics, tp)
	frame := frameOf(req, 1, "c")
	var w Rewriter
	j := mapJudge{"orders": []byte("acme.orders")}
	n := testing.AllocsPerRun(200, func() {
		h, _ := ParseRequestHeader(frame)
		w.Produce(&h, 2, h.ClientID, frame[h.BodyOffset:], j)
		w.Vec.Slices()
	})
	if n != 0 {
		t.Fatalf("Produce rewrite allocates %v per frame", n)
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 11
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "acme.orders"
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.RecordBatches = bytes.Repeat([]byte{1}, 65536)
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	body := resp.AppendTo(nil)
	n = testing.AllocsPerRun(200, func() {
		w.FetchResponse(11, 3, body, j, nil, 0)
		w.Vec.Slices()
	})
	if n != 0 {
		t.Fatalf("Fetch response rewrite allocates %v per frame", n)
	}
}

// mapJudge answers from precomputed names, as decide's session view does.
type mapJudge map[string][]byte

func (m mapJudge) ProduceTopic(n []byte) ([]byte, int16) {
	if p, ok := m[string(n)]; ok {
		return p, 0
	}
	return nil, kerr.UnknownTopicOrPartition.Code
}
func (m mapJudge) FetchTopic(n []byte) ([]byte, int16) { return m.ProduceTopic(n) }
func (m mapJudge) TxnID(id []byte) []byte              { return id }
func (m mapJudge) ClientTopic(p []byte) ([]byte, bool) {
	if bytes.HasPrefix(p, []byte("acme.")) {
		return p[5:], true
	}
	return nil, false
}
