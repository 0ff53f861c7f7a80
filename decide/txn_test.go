// The transaction family's session and helpers, and its rules: requests
// forwarded renamed (D7, N1), refused without transactions, offsets that
// need a receive operation (D6), names too long once prefixed; and
// DescribeCluster (D3, D9). AddPartitionsToTxn and the seeds are in
// txn_*_test.go.

package decide

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The transaction family (24, 25, 26, 28) and DescribeCluster (60): D3, D7,
// N1, N2. The session is fuzz_test.go's: tenant acme on "shop" (no prefix),
// sending to "orders" (transactions per the test), receiving "orders" and
// "audit".

const txnUpCorr = 0x7a11

// txnSession builds acme's session on shop with the given operations of
// fuzzSnapshot, after mutate (may be nil) changed the snapshot.
func txnSession(t *testing.T, mutate func(*configs.Snapshot), ops ...string) *Session {
	t.Helper()
	snap := fuzzSnapshot()
	if mutate != nil {
		mutate(snap)
	}
	v := NewView(snap, snap.Clusters["shop"], "acme", configs.MechAPIKey, ops)
	if v == nil {
		t.Fatalf("no view for %v", ops)
	}
	return &Session{View: v, Versions: fuzzVersions(), Brokers: stubBrokers{},
		Limits: Limits{MaxFetchWaitMs: 30000}}
}

// txnJudge runs req through s and returns the outcome, its Pending and the
// frame written (size prefix stripped).
func txnJudge(t *testing.T, s *Session, req kmsg.Request) (Outcome, *Pending, []byte) {
	t.Helper()
	fr := reqFrame(req, 41, "app-1")
	h, err := codec.ParseRequestHeader(fr)
	if err != nil {
		t.Fatal(err)
	}
	p := &Pending{}
	out := s.Request(&h, fr, txnUpCorr, testGrant, p)
	var b []byte
	for _, sl := range s.RW.Vec.Slices() {
		b = append(b, sl...)
	}
	if out == Forward || out == Answer {
		if len(b) < codec.SizeLen || int(codec.FrameSize(b)) != len(b)-codec.SizeLen {
			t.Fatalf("%s v%d: bad size prefix", Name(h.Key), h.Version)
		}
		b = b[codec.SizeLen:]
	}
	return out, p, b
}

// txnForwarded decodes a forwarded request, checking its header.
func txnForwarded(t *testing.T, key, version int16, b []byte) kmsg.Request {
	t.Helper()
	h, err := codec.ParseRequestHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Key != key || h.Version != version || h.Correlation != txnUpCorr || string(h.ClientID) != "acme.app-1" {
		t.Fatalf("forwarded header %+v", h)
	}
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	if err := req.ReadFrom(b[h.BodyOffset:]); err != nil {
		t.Fatalf("forwarded %s v%d does not decode: %v", Name(key), version, err)
	}
	return req
}

// txnAnswer decodes an answer for the client.
func txnAnswer(t *testing.T, p *Pending, b []byte) kmsg.Response {
	t.Helper()
	corr, body, err := codec.ParseResponseHeader(b, p.Key, p.Version)
	if err != nil || corr != p.ClientCorr {
		t.Fatalf("answer header: corr %d, %v", corr, err)
	}
	resp := kmsg.ResponseForKey(p.Key)
	resp.SetVersion(p.Version)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("answer to %s v%d does not decode: %v", Name(p.Key), p.Version, err)
	}
	return resp
}

// txnReply runs the broker's answer resp to p through s and decodes what
// the client gets.
func txnReply(t *testing.T, s *Session, p *Pending, resp kmsg.Response) kmsg.Response {
	t.Helper()
	resp.SetVersion(p.Version)
	fr := codec.AppendResponseHeader(nil, p.Key, p.Version, p.UpCorr)
	fr = resp.AppendTo(fr)
	if err := s.Response(p, fr); err != nil {
		t.Fatalf("%s v%d answer: %v", Name(p.Key), p.Version, err)
	}
	var b []byte
	for _, sl := range s.RW.Vec.Slices() {
		b = append(b, sl...)
	}
	if len(b) < codec.SizeLen || int(codec.FrameSize(b)) != len(b)-codec.SizeLen {
		t.Fatalf("%s v%d answer: bad size prefix", Name(p.Key), p.Version)
	}
	return txnAnswer(t, p, b[codec.SizeLen:])
}

// codes flattens per-partition codes as "topic/partition=code".
func apCodes(resp *kmsg.AddPartitionsToTxnResponse) []string {
	var out []string
	add := func(txn, topic string, part int32, code int16) {
		out = append(out, txn+topic+"/"+itoa32(part)+"="+codeName(code))
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			add("", t.Topic, p.Partition, p.ErrorCode)
		}
	}
	for _, txn := range resp.Transactions {
		for _, t := range txn.Topics {
			for _, p := range t.Partitions {
				add(txn.TransactionalID+":", t.Topic, p.Partition, p.ErrorCode)
			}
		}
		if len(txn.Topics) == 0 {
			out = append(out, txn.TransactionalID+":")
		}
	}
	slices.Sort(out)
	return out
}

func tocCodes(resp *kmsg.TxnOffsetCommitResponse) []string {
	var out []string
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, t.Topic+"/"+itoa32(p.Partition)+"="+codeName(p.ErrorCode))
		}
	}
	slices.Sort(out)
	return out
}

// codeName is a Kafka error code's name ("<nil>" for none).
func codeName(code int16) string {
	if code == 0 {
		return "<nil>"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return itoa32(int32(code))
}

func itoa32(n int32) string {
	if n < 0 {
		return "-" + itoa32(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa32(n/10) + string(rune('0'+n%10))
}

func apRequest(v int16, txn string, topics ...string) *kmsg.AddPartitionsToTxnRequest {
	r := kmsg.NewPtrAddPartitionsToTxnRequest()
	r.Version = v
	if v >= 4 {
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch = txn, 7, 1
		for _, name := range topics {
			tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			tt.Topic, tt.Partitions = name, []int32{0, 1}
			tx.Topics = append(tx.Topics, tt)
		}
		r.Transactions = append(r.Transactions, tx)
		return r
	}
	r.TransactionalID, r.ProducerID, r.ProducerEpoch = txn, 7, 1
	for _, name := range topics {
		tt := kmsg.NewAddPartitionsToTxnRequestTopic()
		tt.Topic, tt.Partitions = name, []int32{0, 1}
		r.Topics = append(r.Topics, tt)
	}
	return r
}

func tocRequest(v int16, txn, group string, topics ...string) *kmsg.TxnOffsetCommitRequest {
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version, r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch = v, txn, group, 7, 1
	r.Generation, r.MemberID = 3, "acme.app-1-uuid"
	for _, name := range topics {
		tt := kmsg.NewTxnOffsetCommitRequestTopic()
		tt.Topic = name
		for _, part := range []int32{0, 1} {
			pp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			pp.Partition, pp.Offset = part, 100
			tt.Partitions = append(tt.Partitions, pp)
		}
		r.Topics = append(r.Topics, tt)
	}
	return r
}

// D7, N1: every transactional request of a session with transactions is
// forwarded with the transactional id, the group and the topics in the
// tenant's namespaces, at every version served.
func TestTxnForwardedRenamed(t *testing.T) {
	s := fuzzSession(t, true)
	for v := int16(0); v <= 5; v++ {
		out, _, b := txnJudge(t, s, apRequest(v, "tx-orders", "orders"))
		if out != Forward {
			t.Fatalf("AddPartitionsToTxn v%d: outcome %d", v, out)
		}
		r := txnForwarded(t, 24, v, b).(*kmsg.AddPartitionsToTxnRequest)
		if v < 4 {
			if r.TransactionalID != "acme.~t.tx-orders" || len(r.Topics) != 1 || r.Topics[0].Topic != "acme.orders" ||
				!slices.Equal(r.Topics[0].Partitions, []int32{0, 1}) || r.ProducerID != 7 || r.ProducerEpoch != 1 {
				t.Fatalf("AddPartitionsToTxn v%d forwarded %+v", v, r)
			}
		} else if len(r.Transactions) != 1 || r.Transactions[0].TransactionalID != "acme.~t.tx-orders" ||
			len(r.Transactions[0].Topics) != 1 || r.Transactions[0].Topics[0].Topic != "acme.orders" {
			t.Fatalf("AddPartitionsToTxn v%d forwarded %+v", v, r)
		}
	}
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.Version, req.TransactionalID, req.Group, req.ProducerID = v, "tx-orders", "billing", 7
		out, _, b := txnJudge(t, s, req)
		if out != Forward {
			t.Fatalf("AddOffsetsToTxn v%d: outcome %d", v, out)
		}
		r := txnForwarded(t, 25, v, b).(*kmsg.AddOffsetsToTxnRequest)
		if r.TransactionalID != "acme.~t.tx-orders" || r.Group != "acme.~g.billing" || r.ProducerID != 7 {
			t.Fatalf("AddOffsetsToTxn v%d forwarded %+v", v, r)
		}
	}
	for v := int16(0); v <= 5; v++ {
		req := kmsg.NewPtrEndTxnRequest()
		req.Version, req.TransactionalID, req.Commit, req.ProducerID = v, "tx-orders", true, 7
		out, _, b := txnJudge(t, s, req)
		if out != Forward {
			t.Fatalf("EndTxn v%d: outcome %d", v, out)
		}
		r := txnForwarded(t, 26, v, b).(*kmsg.EndTxnRequest)
		if r.TransactionalID != "acme.~t.tx-orders" || !r.Commit || r.ProducerID != 7 {
			t.Fatalf("EndTxn v%d forwarded %+v", v, r)
		}
	}
	for v := int16(0); v <= 5; v++ {
		out, _, b := txnJudge(t, s, tocRequest(v, "tx-orders", "billing", "orders", "audit"))
		if out != Forward {
			t.Fatalf("TxnOffsetCommit v%d: outcome %d", v, out)
		}
		r := txnForwarded(t, 28, v, b).(*kmsg.TxnOffsetCommitRequest)
		if r.TransactionalID != "acme.~t.tx-orders" || r.Group != "acme.~g.billing" || len(r.Topics) != 2 ||
			r.Topics[0].Topic != "acme.orders" || r.Topics[1].Topic != "acme.audit" || len(r.Topics[0].Partitions) != 2 {
			t.Fatalf("TxnOffsetCommit v%d forwarded %+v", v, r)
		}
		if v >= 3 && (r.Generation != 3 || r.MemberID != "acme.app-1-uuid") {
			t.Fatalf("TxnOffsetCommit v%d: member %q generation %d", v, r.MemberID, r.Generation)
		}
	}
	// The versions that name topics by id are never announced.
	if _, hi, _ := s.Versions.Range(28); hi != 5 {
		t.Fatalf("TxnOffsetCommit announced up to v%d", hi)
	}
}

// D7: a session without transactions: true is refused every transactional
// request with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, in the API's shape,
// without asking the broker.
func TestTxnRefusedWithoutTransactions(t *testing.T) {
	const denied = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
	s := fuzzSession(t, false)
	for v := int16(0); v <= 5; v++ {
		out, p, b := txnJudge(t, s, apRequest(v, "tx-orders", "orders", "audit"))
		if out != Answer {
			t.Fatalf("AddPartitionsToTxn v%d: outcome %d", v, out)
		}
		resp := txnAnswer(t, p, b).(*kmsg.AddPartitionsToTxnResponse)
		prefix := ""
		if v >= 4 {
			prefix = "tx-orders:"
		}
		want := []string{prefix + "audit/0=" + denied, prefix + "audit/1=" + denied, prefix + "orders/0=" + denied, prefix + "orders/1=" + denied}
		if got := apCodes(resp); !slices.Equal(got, want) {
			t.Fatalf("AddPartitionsToTxn v%d: %v, want %v", v, got, want)
		}
	}
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.Version, req.TransactionalID, req.Group = v, "tx-orders", "billing"
		out, p, b := txnJudge(t, s, req)
		if out != Answer || txnAnswer(t, p, b).(*kmsg.AddOffsetsToTxnResponse).ErrorCode != 53 {
			t.Fatalf("AddOffsetsToTxn v%d: outcome %d", v, out)
		}
	}
	for v := int16(0); v <= 5; v++ {
		req := kmsg.NewPtrEndTxnRequest()
		req.Version, req.TransactionalID = v, "tx-orders"
		out, p, b := txnJudge(t, s, req)
		if out != Answer {
			t.Fatalf("EndTxn v%d: outcome %d", v, out)
		}
		if resp := txnAnswer(t, p, b).(*kmsg.EndTxnResponse); resp.ErrorCode != 53 || (v >= 5 && resp.ProducerID != -1) {
			t.Fatalf("EndTxn v%d: %+v", v, resp)
		}
	}
	for v := int16(0); v <= 5; v++ {
		out, p, b := txnJudge(t, s, tocRequest(v, "tx-orders", "billing", "orders"))
		if out != Answer {
			t.Fatalf("TxnOffsetCommit v%d: outcome %d", v, out)
		}
		want := []string{"orders/0=" + denied, "orders/1=" + denied}
		if got := tocCodes(txnAnswer(t, p, b).(*kmsg.TxnOffsetCommitResponse)); !slices.Equal(got, want) {
			t.Fatalf("TxnOffsetCommit v%d: %v", v, got)
		}
	}
}

// D6: a transactional offset commit needs a receive operation for its
// group (GROUP_AUTHORIZATION_FAILED), its topics a receive operation each.
func TestTxnOffsetsNeedReceive(t *testing.T) {
	s := txnSession(t, nil, "acme-send-orders") // transactions, no receive
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version, req.TransactionalID, req.Group = 3, "tx-orders", "billing"
	out, p, b := txnJudge(t, s, req)
	if out != Answer || txnAnswer(t, p, b).(*kmsg.AddOffsetsToTxnResponse).ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("AddOffsetsToTxn without receive: outcome %d", out)
	}
	out, p, b = txnJudge(t, s, tocRequest(3, "tx-orders", "billing", "orders"))
	if out != Answer {
		t.Fatalf("TxnOffsetCommit without receive: outcome %d", out)
	}
	if got := tocCodes(txnAnswer(t, p, b).(*kmsg.TxnOffsetCommitResponse)); !slices.Equal(got, []string{
		"orders/0=GROUP_AUTHORIZATION_FAILED", "orders/1=GROUP_AUTHORIZATION_FAILED"}) {
		t.Fatalf("TxnOffsetCommit without receive: %v", got)
	}

	// With receive on orders only: audit is not opened (unknown), payments
	// is globex's; orders is committed and the refusals merged.
	s = txnSession(t, nil, "acme-send-orders", "acme-recv-orders")
	out, p, b = txnJudge(t, s, tocRequest(5, "tx-orders", "billing", "payments", "orders", "audit"))
	if out != Forward {
		t.Fatalf("TxnOffsetCommit: outcome %d", out)
	}
	fw := txnForwarded(t, 28, 5, b).(*kmsg.TxnOffsetCommitRequest)
	if len(fw.Topics) != 1 || fw.Topics[0].Topic != "acme.orders" {
		t.Fatalf("forwarded topics %+v", fw.Topics)
	}
	resp := kmsg.NewPtrTxnOffsetCommitResponse()
	for _, name := range []string{"acme.orders", "globex.payments"} {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = name
		for _, part := range []int32{0, 1} {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = part
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	got := tocCodes(txnReply(t, s, p, resp).(*kmsg.TxnOffsetCommitResponse))
	want := []string{
		"audit/0=UNKNOWN_TOPIC_OR_PARTITION", "audit/1=UNKNOWN_TOPIC_OR_PARTITION",
		"orders/0=<nil>", "orders/1=<nil>",
		"payments/0=UNKNOWN_TOPIC_OR_PARTITION", "payments/1=UNKNOWN_TOPIC_OR_PARTITION",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("merged answer %v, want %v", got, want)
	}

	// Nothing left to commit: answered without asking.
	out, p, b = txnJudge(t, s, tocRequest(2, "tx-orders", "billing", "audit"))
	if out != Answer {
		t.Fatalf("TxnOffsetCommit of refused topics only: outcome %d", out)
	}
	if got := tocCodes(txnAnswer(t, p, b).(*kmsg.TxnOffsetCommitResponse)); len(got) != 2 {
		t.Fatalf("answer %v", got)
	}
}

// The tenant's prefix never pushes a name past a Kafka string's length.
func TestTxnLongNames(t *testing.T) {
	s := fuzzSession(t, true)
	long := strings.Repeat("t", math.MaxInt16-3)
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID = 1, long
	out, p, b := txnJudge(t, s, req)
	if out != Answer || txnAnswer(t, p, b).(*kmsg.EndTxnResponse).ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("EndTxn with a long id: outcome %d", out)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.Version, add.TransactionalID, add.Group = 1, "tx", long
	out, p, b = txnJudge(t, s, add)
	if out != Answer || txnAnswer(t, p, b).(*kmsg.AddOffsetsToTxnResponse).ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("AddOffsetsToTxn with a long group: outcome %d", out)
	}
}

// D3, D9: DescribeCluster answers the virtual cluster: its name, the
// brokers renamed, no rack, no authorized operations (never asked); a
// controllers' request is answered by the gateway.
func TestDescribeCluster(t *testing.T) {
	s := fuzzSession(t, false)
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.IncludeClusterAuthorizedOperations, req.IncludeFencedBrokers = v, true, true
		out, p, b := txnJudge(t, s, req)
		if out != Forward {
			t.Fatalf("v%d: outcome %d", v, out)
		}
		fw := txnForwarded(t, 60, v, b).(*kmsg.DescribeClusterRequest)
		if fw.IncludeClusterAuthorizedOperations || (v >= 1 && fw.EndpointType != 1) || (v >= 2 && !fw.IncludeFencedBrokers) {
			t.Fatalf("v%d forwarded %+v", v, fw)
		}
		resp := kmsg.NewPtrDescribeClusterResponse()
		resp.ClusterID, resp.ControllerID, resp.ClusterAuthorizedOperations = "PHYSICAL-ID", 2, 0x7fff
		msg := "broker words"
		resp.ErrorMessage = &msg
		rack := "rack-a"
		for _, n := range []int32{0, 1, 2} {
			resp.Brokers = append(resp.Brokers, kmsg.DescribeClusterResponseBroker{NodeID: n, Host: "kafka-0.internal", Port: 9093, Rack: &rack, IsFenced: n == 2})
		}
		got := txnReply(t, s, p, resp).(*kmsg.DescribeClusterResponse)
		if got.ClusterID != "shop" || got.ControllerID != 2 || got.ClusterAuthorizedOperations != math.MinInt32 ||
			got.ErrorMessage != nil || len(got.Brokers) != 3 {
			t.Fatalf("v%d answer %+v", v, got)
		}
		for _, br := range got.Brokers {
			if br.Host != "gw.example" || br.Port != 9092 || br.Rack != nil || (v >= 2 && br.IsFenced != (br.NodeID == 2)) {
				t.Fatalf("v%d broker %+v", v, br)
			}
		}
	}
	for _, c := range []struct {
		endpoint int8
		code     int16
	}{{2, kerr.MismatchedEndpointType.Code}, {0, kerr.UnsupportedEndpointType.Code}, {7, kerr.UnsupportedEndpointType.Code}} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.EndpointType = 1, c.endpoint
		out, p, b := txnJudge(t, s, req)
		if out != Answer {
			t.Fatalf("endpoint type %d: outcome %d", c.endpoint, out)
		}
		if got := txnAnswer(t, p, b).(*kmsg.DescribeClusterResponse); got.ErrorCode != c.code || len(got.Brokers) != 0 {
			t.Fatalf("endpoint type %d: %+v", c.endpoint, got)
		}
	}
}
