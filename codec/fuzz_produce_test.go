// FuzzProduceRewrite: the Produce request's rewriting. Seeds and checks are
// fuzz_test.go's.

package codec

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

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

	f.Fuzz(checkProduceRewrite)
}

// checkProduceRewrite is FuzzProduceRewrite's body: a Produce request the
// codec accepts is forwarded with acme. names, no tags, a mapped
// transactional id and its records counted, and, when kmsg reads the input,
// as the input renamed.
func checkProduceRewrite(t *testing.T, frame []byte) {
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
	checkProduceForwarded(t, got, info, &w.Dropped)

	// Differential: when kmsg reads the input, the output is the input
	// renamed, its records untouched, refused topics in Dropped.
	in := kmsg.NewPtrProduceRequest()
	in.Version = h.Version
	if in.ReadFrom(body) != nil {
		return
	}
	checkProduceDiff(t, in, got, info, &w.Dropped)
}

// checkProduceForwarded: the forwarded request holds as many topics as the
// codec kept, all acme. ones without tags, the transactional id only when
// mapped, the record bytes the codec counted, and only deny topics dropped,
// each with an error code.
func checkProduceForwarded(t *testing.T, got *kmsg.ProduceRequest, info ProduceInfo, dropped *Dropped) {
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
	for _, d := range dropped.Topics {
		if !bytes.HasPrefix(d.Name, []byte("deny")) || d.Code == 0 {
			t.Fatalf("topic %q dropped with code %d", d.Name, d.Code)
		}
	}
}

// checkProduceDiff: acks, timeout and transactional id as the input's, each
// deny topic in Dropped with its partitions, each other topic renamed with
// its records untouched, and nothing the input does not hold.
func checkProduceDiff(t *testing.T, in, got *kmsg.ProduceRequest, info ProduceInfo, dropped *Dropped) {
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
			dt := dropped.Topics[d]
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
	if k != len(got.Topics) || d != len(dropped.Topics) {
		t.Fatal("topics forwarded or dropped that the input does not hold")
	}
}
