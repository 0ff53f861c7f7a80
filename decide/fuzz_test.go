package decide

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fuzzing of Session.Request:
//
//	go test ./decide -run '^$' -fuzz '^FuzzSessionRequest$' -fuzztime 20s
//
// The session is tenant acme's on virtual cluster "shop" (no prefix): it
// may send to and receive from "orders" and receive from "audit". The
// snapshot also holds the other tenant's (globex) operations and an acme
// operation of another cluster, which the view must ignore.

type stubBrokers struct{}

func (stubBrokers) Advertise(nodeID int32) (string, int32) { return "gw.example", 9092 }
func (stubBrokers) Learn(int32, string, int32)             {}

func fuzzSnapshot() *configs.Snapshot {
	op := func(id, action, channel, cluster string, txn bool) *configs.Operation {
		return &configs.Operation{ID: id, Action: action, Channel: channel, Cluster: cluster, Upstream: "main",
			Transactions: txn, Plain: true}
	}
	ops := map[string]*configs.Operation{
		"acme-send-orders":    op("acme-send-orders", "send", "orders", "shop", true),
		"acme-recv-orders":    op("acme-recv-orders", "receive", "orders", "shop", false),
		"acme-recv-audit":     op("acme-recv-audit", "receive", "audit", "shop", false),
		"globex-send-orders":  op("globex-send-orders", "send", "orders", "shop", true),
		"globex-recv-payment": op("globex-recv-payment", "receive", "payments", "shop", false),
		"acme-send-elsewhere": op("acme-send-elsewhere", "send", "elsewhere", "other", false),
	}
	ops["acme-recv-orders"].AdminScope = fuzzAdminScope // D8: see admin_test.go
	shop := &configs.Cluster{
		Name: "shop", Upstream: "main", Prefix: "", Plain: true,
		Topics: map[string]*configs.Topic{
			"orders": {Name: "orders",
				Send:    []*configs.Operation{ops["acme-send-orders"], ops["globex-send-orders"]},
				Receive: []*configs.Operation{ops["acme-recv-orders"]}},
			"audit":    {Name: "audit", Receive: []*configs.Operation{ops["acme-recv-audit"]}},
			"payments": {Name: "payments", Receive: []*configs.Operation{ops["globex-recv-payment"]}},
		},
	}
	other := &configs.Cluster{
		Name: "other", Upstream: "main", Plain: true,
		Topics: map[string]*configs.Topic{"elsewhere": {Name: "elsewhere", Send: []*configs.Operation{ops["acme-send-elsewhere"]}}},
	}
	return &configs.Snapshot{
		Operations: ops,
		Clusters:   map[string]*configs.Cluster{"shop": shop, "other": other},
	}
}

// allVersions is one broker answering every key kmsg knows, 0..kmsg's max.
func allVersions() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		req := kmsg.RequestForKey(k)
		if req == nil {
			continue
		}
		kv := kmsg.NewApiVersionsResponseApiKey()
		kv.ApiKey, kv.MinVersion, kv.MaxVersion = k, 0, req.MaxVersion()
		resp.ApiKeys = append(resp.ApiKeys, kv)
	}
	return resp
}

// fuzzVersions is built on first use: a package-level initializer would
// run before the init functions that fill the table.
var fuzzVersions = sync.OnceValue(func() *Versions {
	return NewVersions([]*kmsg.ApiVersionsResponse{allVersions()})
})

// fuzzSession builds acme's session; with txn, its send operation allows transactions.
func fuzzSession(t testing.TB, txn bool) *Session {
	snap := fuzzSnapshot()
	snap.Operations["acme-send-orders"].Transactions = txn
	v := NewView(snap, snap.Clusters["shop"], "acme", configs.MechAPIKey, []string{
		"acme-send-orders", "acme-recv-orders", "acme-recv-audit", "acme-send-elsewhere", "no-such-op",
	})
	if v == nil || len(v.Ops) != 3 || v.Transactions != txn {
		t.Fatalf("view %+v", v)
	}
	v.SetAdminScopes([]string{fuzzAdminScope}) // orders is administrable, audit is not
	return &Session{
		View:     v,
		Versions: fuzzVersions(),
		Brokers:  stubBrokers{},
		Limits:   Limits{MaxFetchWaitMs: 30000},
	}
}

// reqFrame encodes a request as the client sends it (size prefix stripped).
func reqFrame(req kmsg.Request, corr int32, client string) []byte {
	f := codec.AppendRequestHeader(nil, req.Key(), req.GetVersion(), corr, []byte(client), false, req.IsFlexible())
	return req.AppendTo(f)
}

// testGrant is the budget's grant in the tests: a Fetch asks for at most 1 MiB.
const testGrant = 1 << 20

func FuzzSessionRequest(f *testing.F) {
	for _, fr := range servedSeeds() {
		f.Add(fr)
	}
	// Local and never-announced keys, versions past the table, garbage.
	for _, k := range []int16{18, 17, 36, 11, 29, 68, 8} {
		r := kmsg.RequestForKey(k)
		r.SetVersion(r.MaxVersion())
		f.Add(reqFrame(r, 1, "app-1"))
	}
	for _, v := range []int16{13} { // Produce v13, Metadata v13: topic ids
		r := kmsg.NewPtrProduceRequest()
		r.Version = v
		f.Add(reqFrame(r, 1, "app-1"))
	}
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0xde, 0xad, 0xbe, 0xef})
	f.Add([]byte{0, 1, 0, 12, 0, 0, 0, 1, 0xff, 0xff, 0, 0xff, 0xff, 0xff, 0xff})
	f.Add(bytes.Repeat([]byte{0xff}, 64))

	f.Fuzz(func(t *testing.T, frame []byte) {
		h, err := codec.ParseRequestHeader(frame)
		if err != nil {
			return // the engine disconnects on a header it cannot read
		}
		for _, txn := range []bool{false, true} {
			s := fuzzSession(t, txn)
			var p Pending
			for round := 0; round < 2; round++ { // scratch reused as on a connection
				checkRequest(t, s, &h, frame, &p)
			}
		}
	})
}

const fuzzUpCorr = int32(0x5eed)

func checkRequest(t *testing.T, s *Session, h *codec.RequestHeader, frame []byte, p *Pending) {
	t.Helper()
	out := s.Request(h, frame, fuzzUpCorr, testGrant, p)
	kind, _ := KindOf(h.Key)
	if p.Key != h.Key || p.Version != h.Version || p.ClientCorr != h.Correlation || p.UpCorr != fuzzUpCorr {
		t.Fatalf("pending %+v for header %+v", p, *h)
	}
	if out != Disconnect && (kind != Served || !s.Versions.Has(h.Key, h.Version)) {
		t.Fatalf("%s v%d (kind %d) not disconnected: outcome %d", Name(h.Key), h.Version, kind, out)
	}
	switch out {
	case Disconnect:
		if p.Cause == "" {
			t.Fatal("disconnect without a cause")
		}
		return
	case Drop:
		// Only a Produce with acks=0 (no answer expected) may go unanswered.
		if h.Key != 0 {
			t.Fatalf("%s dropped", Name(h.Key))
		}
		if acks, ok := produceAcks(h, frame); ok && acks != 0 {
			t.Fatalf("Produce with acks=%d dropped", acks)
		}
		return
	}
	if h.Key == 0 {
		if acks, ok := produceAcks(h, frame); ok && acks == 0 && (out == Answer || !p.NoResponse) {
			t.Fatalf("Produce with acks=0: outcome %d, no-response %v", out, p.NoResponse)
		}
	}
	var b []byte
	for _, sl := range s.RW.Vec.Slices() {
		b = append(b, sl...)
	}
	if len(b) < codec.SizeLen || int(codec.FrameSize(b)) != len(b)-codec.SizeLen {
		t.Fatalf("outcome %d: bad size prefix in %d bytes", out, len(b))
	}
	b = b[codec.SizeLen:]
	if len(b) > 2*len(frame)+64<<10 {
		t.Fatalf("outcome %d: %d bytes for a request of %d", out, len(b), len(frame))
	}

	if out == Answer {
		checkAnswered(t, h, b)
		return
	}

	// Forward.
	if out != Forward {
		t.Fatalf("outcome %d", out)
	}
	if p.Reserve <= 0 {
		t.Fatalf("forward without a reserve: %d", p.Reserve)
	}
	req := checkForwardedFrame(t, h, b, frame)
	checkServedForwarded(t, s, req)
}

// checkAnswered: an answer from the gateway carries the client's
// correlation id and decodes as the request's key and version.
func checkAnswered(t *testing.T, h *codec.RequestHeader, b []byte) {
	t.Helper()
	corr, body, err := codec.ParseResponseHeader(b, h.Key, h.Version)
	if err != nil || corr != h.Correlation {
		t.Fatalf("answer header: corr %d, %v", corr, err)
	}
	resp := kmsg.ResponseForKey(h.Key)
	resp.SetVersion(h.Version)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("answer to %s v%d does not decode: %v", Name(h.Key), h.Version, err)
	}
}

// checkForwardedFrame: a forwarded request is the client's key and
// version under the upstream correlation id, with the tenant's client id,
// no name of the other tenant the client did not write, and decodes; it
// returns the decoded request.
func checkForwardedFrame(t *testing.T, h *codec.RequestHeader, b, frame []byte) kmsg.Request {
	t.Helper()
	h2, err := codec.ParseRequestHeader(b)
	if err != nil {
		t.Fatalf("forwarded header: %v", err)
	}
	if k, _ := KindOf(h2.Key); k != Served || h2.Key != h.Key || h2.Version != h.Version || h2.Correlation != fuzzUpCorr {
		t.Fatalf("forwarded %s v%d corr %d for %s v%d", Name(h2.Key), h2.Version, h2.Correlation, Name(h.Key), h.Version)
	}
	if h.ClientNull {
		// A client without a client id is forwarded without one: the
		// broker cannot tell it apart, but quotas are per principal.
		if !h2.ClientNull {
			t.Fatalf("null client id forwarded as %q", h2.ClientID)
		}
	} else if string(h2.ClientID) != "acme."+string(h.ClientID) {
		t.Fatalf("client id %q forwarded as %q", h.ClientID, h2.ClientID)
	}
	if bytes.Contains(b, []byte("globex")) && !bytes.Contains(frame, []byte("globex")) {
		t.Fatal("the other tenant's name appeared in a forwarded request")
	}

	req := kmsg.RequestForKey(h2.Key)
	req.SetVersion(h2.Version)
	if err := req.ReadFrom(b[h2.BodyOffset:]); err != nil {
		t.Fatalf("forwarded %s v%d does not decode: %v", Name(h2.Key), h2.Version, err)
	}
	return req
}

// checkServedForwarded holds a forwarded request to its family's
// invariants: the served APIs' here, the groups', transactions' and
// administration's in their files.
func checkServedForwarded(t *testing.T, s *Session, req kmsg.Request) {
	t.Helper()
	recv := func(what, name string) {
		if name != "acme.orders" && name != "acme.audit" {
			t.Fatalf("%s: topic %q forwarded", what, name)
		}
	}
	txnID := func(id *string) {
		if id != nil && !strings.HasPrefix(*id, "acme.~t.") {
			t.Fatalf("transactional id %q forwarded", *id)
		}
		if id != nil && !s.View.Transactions {
			t.Fatal("a transactional id forwarded for a session without transactions")
		}
	}
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		for _, tp := range r.Topics {
			if tp.Topic != "acme.orders" { // the only topic acme sends to
				t.Fatalf("Produce: topic %q forwarded", tp.Topic)
			}
		}
		txnID(r.TransactionID)
		if len(r.Topics) == 0 {
			t.Fatal("Produce forwarded without topics")
		}
	case *kmsg.FetchRequest:
		for _, tp := range r.Topics {
			recv("Fetch", tp.Topic)
		}
		if r.ReplicaID != -1 || r.MaxWaitMillis > 30000 || r.MaxBytes > 1<<20 || r.MaxBytes <= 0 {
			t.Fatalf("Fetch bounds not applied: replica %d wait %d bytes %d", r.ReplicaID, r.MaxWaitMillis, r.MaxBytes)
		}
	case *kmsg.ListOffsetsRequest:
		for _, tp := range r.Topics {
			recv("ListOffsets", tp.Topic)
		}
		if r.ReplicaID != -1 {
			t.Fatalf("ListOffsets replica id %d", r.ReplicaID)
		}
	case *kmsg.OffsetForLeaderEpochRequest:
		for _, tp := range r.Topics {
			recv("OffsetForLeaderEpoch", tp.Topic)
		}
		if r.Version >= 3 && r.ReplicaID != -1 { // the field is v3+
			t.Fatalf("OffsetForLeaderEpoch replica id %d", r.ReplicaID)
		}
	case *kmsg.MetadataRequest:
		if r.Topics == nil {
			t.Fatal("Metadata forwarded asking for all the broker's topics")
		}
		for _, tp := range r.Topics {
			if tp.Topic == nil {
				t.Fatal("Metadata forwarded a topic by id")
			}
			recv("Metadata", *tp.Topic)
		}
		if r.AllowAutoTopicCreation || r.IncludeClusterAuthorizedOperations || r.IncludeTopicAuthorizedOperations {
			t.Fatal("Metadata flags not cleared")
		}
	case *kmsg.InitProducerIDRequest:
		txnID(r.TransactionalID)
		if r.TransactionalID == nil && !s.View.CanSend {
			t.Fatal("idempotent producer without a send operation")
		}
	default:
		if checkGroupForwarded(t, s, req) || checkTxnForwarded(t, s, req) || checkAdminForwarded(t, s, req) {
			return
		}
		t.Fatalf("%T forwarded: no invariant written for it", req)
	}
}

// produceAcks reads a Produce request's acks with kmsg.
func produceAcks(h *codec.RequestHeader, frame []byte) (int16, bool) {
	r := kmsg.NewPtrProduceRequest()
	r.Version = h.Version
	if r.ReadFrom(frame[h.BodyOffset:]) != nil {
		return 0, false
	}
	return r.Acks, true
}

// D1: the closed table covers every key kmsg knows.
func TestTableEqualsKmsg(t *testing.T) {
	local := map[int16]bool{17: true, 18: true, 36: true}
	for k := int16(-1); k <= kmsg.MaxKey+1; k++ {
		req := kmsg.RequestForKey(k)
		kind, why := KindOf(k)
		if req == nil {
			if kind != Never || why == "" {
				t.Errorf("key %d unknown to kmsg: kind %d (%q)", k, kind, why)
			}
			continue
		}
		switch kind {
		case Never:
			if why == "" {
				t.Errorf("%s (%d) is never announced without a reason", Name(k), k)
			}
		case Served:
			a := table[k]
			if a.req == nil || a.resp == nil {
				t.Errorf("%s (%d) is served without a handler (req %v, resp %v)", Name(k), k, a.req != nil, a.resp != nil)
			}
			if a.min < 0 || a.min > a.max || a.max > req.MaxVersion() {
				t.Errorf("%s (%d) served at v%d-%d, kmsg knows up to v%d", Name(k), k, a.min, a.max, req.MaxVersion())
			}
			if why != "" {
				t.Errorf("%s (%d) served with a never-reason %q", Name(k), k, why)
			}
		case Local:
			if !local[k] {
				t.Errorf("%s (%d) answered locally", Name(k), k)
			}
		default:
			t.Errorf("%s (%d): kind %d", Name(k), k, kind)
		}
		if local[k] && kind != Local {
			t.Errorf("%s (%d) should be answered locally, kind %d", Name(k), k, kind)
		}
	}
	// Every served key's whole announced range goes through its handler
	// without panicking on an empty body.
	s := fuzzSession(t, true)
	served := 0
	defer func() {
		if served == 0 {
			t.Error("no served key announced")
		}
	}()
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		lo, hi, ok := s.Versions.Range(k)
		if kind, _ := KindOf(k); !ok || kind != Served {
			continue
		}
		served++
		for v := lo; v <= hi; v++ {
			r := kmsg.RequestForKey(k)
			r.SetVersion(v)
			fr := reqFrame(r, 1, "c")
			h, err := codec.ParseRequestHeader(fr)
			if err != nil {
				t.Fatalf("%s v%d: %v", Name(k), v, err)
			}
			var p Pending
			if out := s.Request(&h, fr, 2, testGrant, &p); out == Disconnect {
				t.Errorf("%s v%d, an empty valid request, disconnected: %q", Name(k), v, p.Cause)
			}
		}
	}
}

// The seeds reach every outcome, and a forward of every served key: a
// fuzz target whose seeds all disconnect would prove nothing.
func TestFuzzSeedsReachEveryOutcome(t *testing.T) {
	outcomes := map[Outcome]int{}
	forwarded := map[int16]int{}
	for _, txn := range []bool{false, true} {
		s := fuzzSession(t, txn)
		for _, fr := range servedSeeds() {
			h, err := codec.ParseRequestHeader(fr)
			if err != nil {
				t.Fatal(err)
			}
			var p Pending
			checkRequest(t, s, &h, fr, &p)
			out := s.Request(&h, fr, fuzzUpCorr, testGrant, &p)
			outcomes[out]++
			if out == Forward {
				forwarded[h.Key]++
			}
		}
	}
	for _, o := range []Outcome{Forward, Answer, Drop} {
		if outcomes[o] == 0 {
			t.Errorf("no seed reaches outcome %d (%v)", o, outcomes)
		}
	}
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		if kind, _ := KindOf(k); kind == Served && forwarded[k] == 0 {
			t.Errorf("no seed forwards %s", Name(k))
		}
	}
	t.Logf("outcomes %v, forwards by key %v", outcomes, forwarded)
}

// Known gap (reported, not fixed here): the tenant's prefix is added to
// client-chosen strings whose length is already at the int16 limit
// (client id, transactional id); codec.AppendRequestHeader and the
// non-flexible string encoders then write a wrapped length and the
// broker gets a malformed frame (its connection is the client's own, so
// only that client suffers). The test skips while the gap is open; once
// fixed (disconnect, or an error code), turn the Skip into a Fatal.
func TestLongClientIDForwarded(t *testing.T) {
	s := fuzzSession(t, true)
	r := kmsg.NewPtrMetadataRequest()
	r.Version = 4
	fr := reqFrame(r, 1, strings.Repeat("c", 32767))
	h, err := codec.ParseRequestHeader(fr)
	if err != nil {
		t.Fatal(err)
	}
	var p Pending
	if out := s.Request(&h, fr, 2, testGrant, &p); out != Forward {
		return // refused: fine
	}
	var b []byte
	for _, sl := range s.RW.Vec.Slices() {
		b = append(b, sl...)
	}
	if _, err := codec.ParseRequestHeader(b[codec.SizeLen:]); err != nil {
		t.Fatalf("a 32767-byte client id is forwarded as acme.<id> with a wrapped int16 length: %v", err)
	}
}
