package decide

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Issue 35.3 (invariant 57): the sessions of a loop share one Scratch. A
// Produce of acme's (orders allowed, audit refused) is judged, then one of
// globex's (orders allowed, payments refused), then acme's answer is rewritten: globex's forwarded request
// names globex's topic and client id alone, and acme's answer carries its
// own topic and its refusal, nothing of globex's. An idle session holds
// no scratch of its own.
func TestSessionsShareOneScratch(t *testing.T) {
	sc := new(Scratch)
	acme := fuzzSession(t, false)
	acme.Scratch = sc
	snap := fuzzSnapshot()
	gv := NewView(snap, snap.Clusters["shop"], "globex", configs.MechAPIKey, []string{"globex-send-orders"})
	if gv == nil {
		t.Fatal("no view for globex")
	}
	globex := &Session{Scratch: sc, View: gv, Versions: fuzzVersions(), Brokers: stubBrokers{}}

	af := reqFrame(produceOf("orders", "audit"), 5, "acme-app")
	ah, _ := codec.ParseRequestHeader(af)
	var ap Pending
	if out := acme.Request(&ah, af, 100, testGrant, &ap); out != Forward {
		t.Fatalf("acme's Produce: outcome %d (%s)", out, ap.Cause)
	}

	gf := reqFrame(produceOf("orders", "payments"), 9, "globex-app")
	gh, _ := codec.ParseRequestHeader(gf)
	var gp Pending
	if out := globex.Request(&gh, gf, 200, testGrant, &gp); out != Forward {
		t.Fatalf("globex's Produce: outcome %d (%s)", out, gp.Cause)
	}
	fwd := vecFrame(globex)
	if !bytes.Contains(fwd, []byte("globex.orders")) || bytes.Contains(fwd, []byte("acme")) {
		t.Fatalf("globex's request as forwarded: %q", fwd)
	}

	answer := newHotFrames().produceAnswer // acme.orders, partition 0, no error
	if err := acme.Response(&ap, answer); err != nil {
		t.Fatal(err)
	}
	b := vecFrame(acme)
	if bytes.Contains(b, []byte("globex")) || bytes.Contains(b, []byte("payments")) {
		t.Fatalf("acme's answer names globex: %q", b)
	}
	_, body, err := codec.ParseResponseHeader(b, 0, 9)
	if err != nil {
		t.Fatal(err)
	}
	got := kmsg.NewPtrProduceResponse()
	got.Version = 9
	if err := got.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, tp := range got.Topics {
		for _, pp := range tp.Partitions {
			codes[tp.Topic] = pp.ErrorCode
		}
	}
	if len(codes) != 2 || codes["orders"] != 0 || codes["audit"] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("acme's answer: %v, want orders 0 and audit %d", codes, kerr.TopicAuthorizationFailed.Code)
	}

	// The session itself: its own fields and a pointer to the loop's
	// scratch, under the 96-byte size class (320 bytes with the scratch in it).
	if n := unsafe.Sizeof(Session{}); n > 96 {
		t.Errorf("a Session is %d bytes, want 96 at most: the scratch is the loop's", n)
	}
}

// produceOf is a Produce (v9, acks=all) of 100 bytes to partition 0 of each topic.
func produceOf(topics ...string) *kmsg.ProduceRequest {
	r := kmsg.NewPtrProduceRequest()
	r.Version, r.Acks, r.TimeoutMillis = 9, -1, 30000
	for _, name := range topics {
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = name
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = bytes.Repeat([]byte{7}, 100)
		pt.Partitions = append(pt.Partitions, pp)
		r.Topics = append(r.Topics, pt)
	}
	return r
}
