// The group family's shared session and byte checks (groupSession, groupReq,
// groupResp, decodeAnswer, wantCode), and the coordinator's requests:
// FindCoordinator, Heartbeat and LeaveGroup, DescribeGroups, ListGroups, and
// group names under a cluster prefix. The consumer protocol, the offsets, the
// refusals and bounds, and the seeds and fuzzing of the family are in
// groups_*_test.go.

package decide

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group family (D6, N1, N2, D9) checked on bytes: acme's session on
// the virtual cluster "shop" of fuzzSnapshot (orders: send and receive;
// audit: receive), answers from a broker that also holds globex's names.

// groupSession is acme's session; without recv, its only operation is a
// send (no group is opened to it).
func groupSession(t *testing.T, recv bool) *Session {
	t.Helper()
	snap := fuzzSnapshot()
	ops := []string{"acme-send-orders"}
	if recv {
		ops = append(ops, "acme-recv-orders", "acme-recv-audit")
	}
	v := NewView(snap, snap.Clusters["shop"], "acme", configs.MechAPIKey, ops)
	if v == nil || v.CanReceive != recv {
		t.Fatalf("view %+v", v)
	}
	return &Session{View: v, Versions: fuzzVersions(), Brokers: stubBrokers{}, Limits: Limits{MaxFetchWaitMs: 30000}}
}

func vecFrame(s *Session) []byte {
	var b []byte
	for _, sl := range s.RW.Vec.Slices() {
		b = append(b, sl...)
	}
	return b[codec.SizeLen:]
}

// groupReq runs req through the session. On Forward it returns the request
// as the broker reads it; on Answer, the answer as the client reads it.
func groupReq(t *testing.T, s *Session, req kmsg.Request) (Outcome, kmsg.Request, kmsg.Response, *Pending) {
	t.Helper()
	fr := reqFrame(req, 41, "app-1")
	h, err := codec.ParseRequestHeader(fr)
	if err != nil {
		t.Fatal(err)
	}
	p := &Pending{}
	asked[p] = fr
	out := s.Request(&h, fr, 77, testGrant, p)
	switch out {
	case Forward:
		b := vecFrame(s)
		h2, err := codec.ParseRequestHeader(b)
		if err != nil || h2.Correlation != 77 || h2.Key != h.Key || h2.Version != h.Version {
			t.Fatalf("forwarded header %+v: %v", h2, err)
		}
		fw := kmsg.RequestForKey(h.Key)
		fw.SetVersion(h.Version)
		if err := fw.ReadFrom(b[h2.BodyOffset:]); err != nil {
			t.Fatalf("forwarded %s v%d does not decode: %v", Name(h.Key), h.Version, err)
		}
		if bytes.Contains(b, []byte("globex")) && !bytes.Contains(fr, []byte("globex")) {
			t.Fatalf("forwarded %s names another tenant: %q", Name(h.Key), b)
		}
		return out, fw, nil, p
	case Answer:
		return out, nil, decodeAnswer(t, s, p), p
	}
	t.Fatalf("%s v%d: outcome %d (%s)", Name(h.Key), h.Version, out, p.Cause)
	return out, nil, nil, p
}

// asked holds each request's frame: what the client wrote itself may come back.
var asked = map[*Pending][]byte{}

// decodeAnswer decodes the answer in s.RW.Vec and checks D9 and N2 on its
// bytes: no other tenant's name, no physical name, no broker address or
// words, unless the client wrote that string itself.
func decodeAnswer(t *testing.T, s *Session, p *Pending) kmsg.Response {
	t.Helper()
	b := vecFrame(s)
	corr, body, err := codec.ParseResponseHeader(b, p.Key, p.Version)
	if err != nil || corr != p.ClientCorr {
		t.Fatalf("answer header: corr %d, %v", corr, err)
	}
	resp := kmsg.ResponseForKey(p.Key)
	resp.SetVersion(p.Version)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("answer to %s v%d does not decode: %v", Name(p.Key), p.Version, err)
	}
	for _, bad := range []string{"globex", "acme.orders", "acme.audit", "acme.~g.", "acme.~t.", "10.9.8.7", "broker words"} {
		if bytes.Contains(body, []byte(bad)) && !bytes.Contains(asked[p], []byte(bad)) {
			t.Fatalf("answer to %s v%d holds %q: %q", Name(p.Key), p.Version, bad, body)
		}
	}
	return resp
}

// groupResp feeds the broker's answer to a forwarded request.
func groupResp(t *testing.T, s *Session, p *Pending, resp kmsg.Response) kmsg.Response {
	t.Helper()
	resp.SetVersion(p.Version)
	fr := codec.AppendResponseHeader(nil, p.Key, p.Version, p.UpCorr)
	fr = resp.AppendTo(fr)
	if err := s.Response(p, fr); err != nil {
		t.Fatalf("%s v%d answer: %v", Name(p.Key), p.Version, err)
	}
	return decodeAnswer(t, s, p)
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if got != want.Code {
		t.Fatalf("%s: code %d (%v), want %s", what, got, kerr.ErrorForCode(got), want.Message)
	}
}

var brokerWords = kmsg.StringPtr("broker words")

// D6, N1, N2, L2: FindCoordinator, single key and batched, groups and
// transactions.
func TestFindCoordinatorGroups(t *testing.T) {
	s := groupSession(t, true)
	for _, v := range []int16{0, 1, 3} {
		findCoordinatorSingle(t, s, v)
	}
	for _, v := range []int16{4, 6} {
		for _, typ := range []int8{0, 1} {
			findCoordinatorBatched(t, v, typ)
		}
	}
	// Refusals, answered by the gateway for every key.
	cases := []struct {
		recv, txn bool
		typ       int8
		want      *kerr.Error
	}{
		{false, true, 0, kerr.GroupAuthorizationFailed},
		{true, false, 1, kerr.TransactionalIDAuthorizationFailed},
		{true, true, 2, kerr.InvalidRequest}, // share groups: never served
	}
	for _, c := range cases {
		findCoordinatorRefused(t, c.recv, c.txn, c.typ, c.want)
	}
}

// findCoordinatorSingle: a single-key FindCoordinator of version v is
// forwarded with the tenant's group; the coordinator is answered as the
// gateway, without broker words, and on an error as none.
func findCoordinatorSingle(t *testing.T, s *Session, v int16) {
	r := kmsg.NewPtrFindCoordinatorRequest()
	r.Version, r.CoordinatorKey = v, "billing"
	out, fw, _, p := groupReq(t, s, r)
	if out != Forward || fw.(*kmsg.FindCoordinatorRequest).CoordinatorKey != "acme.~g.billing" {
		t.Fatalf("v%d: outcome %d, forwarded %+v", v, out, fw)
	}
	b := kmsg.NewPtrFindCoordinatorResponse()
	b.NodeID, b.Host, b.Port, b.ErrorMessage = 2, "10.9.8.7", 9999, brokerWords
	a := groupResp(t, s, p, b).(*kmsg.FindCoordinatorResponse)
	if a.NodeID != 2 || a.Host != "gw.example" || a.Port != 9092 || a.ErrorMessage != nil {
		t.Fatalf("v%d: coordinator %d %s:%d %v", v, a.NodeID, a.Host, a.Port, a.ErrorMessage)
	}
	// An error: no coordinator, no broker address.
	b = kmsg.NewPtrFindCoordinatorResponse()
	b.ErrorCode, b.NodeID, b.Host, b.Port = kerr.CoordinatorNotAvailable.Code, 1, "10.9.8.7", 1
	a = groupResp(t, s, p, b).(*kmsg.FindCoordinatorResponse)
	if a.NodeID != -1 || a.Host != "" || a.Port != -1 {
		t.Fatalf("v%d: coordinator on error %d %s:%d", v, a.NodeID, a.Host, a.Port)
	}
}

// findCoordinatorBatched: a batched FindCoordinator of version v, for
// groups (typ 0) or transactions (typ 1), is forwarded with the keys in the
// tenant's namespace; the answer holds only those keys, by short name, each
// coordinator the gateway, without broker words.
func findCoordinatorBatched(t *testing.T, v int16, typ int8) {
	s := groupSession(t, true)
	s.View.Transactions = true
	r := kmsg.NewPtrFindCoordinatorRequest()
	r.Version, r.CoordinatorType, r.CoordinatorKeys = v, typ, []string{"billing", "globex.~g.x"}
	out, fw, _, p := groupReq(t, s, r)
	ns := "acme.~g."
	if typ == 1 {
		ns = "acme.~t."
	}
	if got := fw.(*kmsg.FindCoordinatorRequest).CoordinatorKeys; out != Forward || !slices.Equal(got, []string{ns + "billing", ns + "globex.~g.x"}) {
		t.Fatalf("v%d type %d: forwarded %q", v, typ, got)
	}
	b := kmsg.NewPtrFindCoordinatorResponse()
	for i, k := range []string{ns + "billing", ns + "globex.~g.x", "globex.~g.billing"} {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Host, c.Port, c.ErrorMessage = k, int32(i), "10.9.8.7", 9999, brokerWords
		b.Coordinators = append(b.Coordinators, c)
	}
	a := groupResp(t, s, p, b).(*kmsg.FindCoordinatorResponse)
	if len(a.Coordinators) != 2 || a.Coordinators[0].Key != "billing" || a.Coordinators[1].Key != "globex.~g.x" {
		t.Fatalf("v%d: coordinators %+v", v, a.Coordinators)
	}
	for _, c := range a.Coordinators {
		if c.Host != "gw.example" || c.Port != 9092 || c.ErrorMessage != nil {
			t.Fatalf("coordinator %+v", c)
		}
	}
}

// findCoordinatorRefused: without receive (groups) or transactions
// (transactional ids), or for a share group, every key of a FindCoordinator
// at versions 1, 3, 4 and 6 is answered by the gateway with want.
func findCoordinatorRefused(t *testing.T, recv, txn bool, typ int8, want *kerr.Error) {
	for _, v := range []int16{1, 3, 4, 6} {
		s := groupSession(t, recv)
		s.View.Transactions = txn
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.Version, r.CoordinatorType, r.CoordinatorKey, r.CoordinatorKeys = v, typ, "billing", []string{"billing", "other"}
		out, _, a, _ := groupReq(t, s, r)
		if out != Answer {
			t.Fatalf("type %d v%d: outcome %d", typ, v, out)
		}
		resp := a.(*kmsg.FindCoordinatorResponse)
		if v < 4 {
			wantCode(t, "FindCoordinator", resp.ErrorCode, want)
			continue
		}
		if len(resp.Coordinators) != 2 || resp.Coordinators[1].Key != "other" {
			t.Fatalf("coordinators %+v", resp.Coordinators)
		}
		for _, co := range resp.Coordinators {
			wantCode(t, "FindCoordinator "+co.Key, co.ErrorCode, want)
		}
	}
}

// N1: Heartbeat and LeaveGroup carry the mapped group id; their answers pass.
func TestHeartbeatLeaveGroupMapped(t *testing.T) {
	s := groupSession(t, true)
	for _, v := range []int16{0, 4} {
		r := kmsg.NewPtrHeartbeatRequest()
		r.Version, r.Group, r.MemberID = v, "billing", "m1"
		_, fw, _, p := groupReq(t, s, r)
		if g := fw.(*kmsg.HeartbeatRequest).Group; g != "acme.~g.billing" {
			t.Fatalf("heartbeat group %q", g)
		}
		b := kmsg.NewPtrHeartbeatResponse()
		b.ErrorCode = kerr.RebalanceInProgress.Code
		wantCode(t, "Heartbeat", groupResp(t, s, p, b).(*kmsg.HeartbeatResponse).ErrorCode, kerr.RebalanceInProgress)
	}
	for _, v := range []int16{0, 3, 5} {
		r := kmsg.NewPtrLeaveGroupRequest()
		r.Version, r.Group, r.MemberID = v, "billing", "m1"
		r.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m1", Reason: kmsg.StringPtr("bye")}}
		_, fw, _, p := groupReq(t, s, r)
		if g := fw.(*kmsg.LeaveGroupRequest).Group; g != "acme.~g.billing" {
			t.Fatalf("leave group %q", g)
		}
		b := kmsg.NewPtrLeaveGroupResponse()
		b.Members = []kmsg.LeaveGroupResponseMember{{MemberID: "m1"}}
		a := groupResp(t, s, p, b).(*kmsg.LeaveGroupResponse)
		if v >= 3 && (len(a.Members) != 1 || a.Members[0].MemberID != "m1") {
			t.Fatalf("leave members %+v", a.Members)
		}
	}
}

// D6, D9, N2: DescribeGroups maps the groups both ways, never shows
// ClientHost, strips the tenant from client ids, maps the consumer
// protocol's bytes back and shows no other tenant's group.
func TestDescribeGroupsMapped(t *testing.T) {
	for _, v := range []int16{0, 3, 5, 6} {
		s := groupSession(t, true)
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Version, r.Groups, r.IncludeAuthorizedOperations = v, []string{"billing", "workers"}, true
		out, fw, _, p := groupReq(t, s, r)
		dg := fw.(*kmsg.DescribeGroupsRequest)
		if out != Forward || !slices.Equal(dg.Groups, []string{"acme.~g.billing", "acme.~g.workers"}) || dg.IncludeAuthorizedOperations {
			t.Fatalf("v%d: forwarded %+v", v, dg)
		}
		b := kmsg.NewPtrDescribeGroupsResponse()
		g := kmsg.NewDescribeGroupsResponseGroup()
		g.Group, g.State, g.ProtocolType, g.Protocol, g.AuthorizedOperations, g.ErrorMessage = "acme.~g.billing", "Stable", "consumer", "range", 255, brokerWords
		g.Members = []kmsg.DescribeGroupsResponseGroupMember{{
			MemberID: "m1", ClientID: "acme.app-1", ClientHost: "/10.9.8.7",
			ProtocolMetadata: subscription(1, []string{"acme.orders", "globex.orders"}, "acme.orders"),
			MemberAssignment: assignment(0, "acme.orders", "globex.payments"),
		}, {
			MemberID: "m2", ClientID: "globex.app", ClientHost: "/10.9.8.7",
		}}
		w := kmsg.NewDescribeGroupsResponseGroup()
		w.Group, w.ProtocolType = "acme.~g.workers", "connect"
		w.Members = []kmsg.DescribeGroupsResponseGroupMember{{MemberID: "c1", ClientHost: "/10.9.8.7", ProtocolMetadata: []byte("opaque"), MemberAssignment: []byte("opaque")}}
		f := kmsg.NewDescribeGroupsResponseGroup()
		f.Group = "globex.~g.billing"
		b.Groups = []kmsg.DescribeGroupsResponseGroup{g, w, f}
		a := groupResp(t, s, p, b).(*kmsg.DescribeGroupsResponse)
		if len(a.Groups) != 2 || a.Groups[0].Group != "billing" || a.Groups[1].Group != "workers" {
			t.Fatalf("v%d: groups %+v", v, a.Groups)
		}
		ag := a.Groups[0]
		if v >= 3 && ag.AuthorizedOperations != math.MinInt32 {
			t.Fatalf("authorized operations %d shown", ag.AuthorizedOperations)
		}
		m := ag.Members[0]
		if m.ClientHost != "" || m.ClientID != "app-1" || ag.Members[1].ClientID != "" || ag.Members[1].ClientHost != "" {
			t.Fatalf("members %+v", ag.Members)
		}
		if sub := readSubscription(t, m.ProtocolMetadata); !slices.Equal(sub.Topics, []string{"orders"}) || sub.OwnedPartitions[0].Topic != "orders" {
			t.Fatalf("subscription %+v", sub)
		}
		if got := assignedTopics(t, m.MemberAssignment); !slices.Equal(got, []string{"orders"}) {
			t.Fatalf("assignment %q", got)
		}
		if cm := a.Groups[1].Members[0]; string(cm.ProtocolMetadata) != "opaque" || string(cm.MemberAssignment) != "opaque" || cm.ClientHost != "" {
			t.Fatalf("connect member %+v", cm)
		}
	}
}

// N2: ListGroups lists the tenant's groups only, by short name.
func TestListGroupsTenantOnly(t *testing.T) {
	for _, v := range []int16{0, 3, 4, 5} {
		s := groupSession(t, true)
		r := kmsg.NewPtrListGroupsRequest()
		r.Version = v
		out, _, _, p := groupReq(t, s, r)
		if out != Forward {
			t.Fatalf("v%d: outcome %d", v, out)
		}
		b := kmsg.NewPtrListGroupsResponse()
		for _, g := range []string{"acme.~g.billing", "globex.~g.billing", "billing", "acme.orders", "acme.~t.tx", "acme.~g.", "xacme.~g.x", "acme.~g.a.b"} {
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g, "consumer", "Stable", "classic"
			b.Groups = append(b.Groups, lg)
		}
		a := groupResp(t, s, p, b).(*kmsg.ListGroupsResponse)
		var got []string
		for _, g := range a.Groups {
			got = append(got, g.Group)
		}
		if !slices.Equal(got, []string{"billing", "", "a.b"}) {
			t.Fatalf("v%d: listed %q", v, got)
		}
	}
}

// With a prefix on the cluster, group and transaction names carry it.
func TestGroupNamesWithPrefix(t *testing.T) {
	s := groupSession(t, true)
	snap := fuzzSnapshot()
	shop := snap.Clusters["shop"]
	shop.Prefix = "px-"
	s.View = NewView(snap, shop, "acme", configs.MechAPIKey, []string{"acme-send-orders", "acme-recv-orders"})
	r := kmsg.NewPtrFindCoordinatorRequest()
	r.Version, r.CoordinatorKeys = 4, []string{"billing"}
	_, fw, _, p := groupReq(t, s, r)
	if got := fw.(*kmsg.FindCoordinatorRequest).CoordinatorKeys[0]; got != "px-acme.~g.billing" {
		t.Fatalf("key %q", got)
	}
	b := kmsg.NewPtrFindCoordinatorResponse()
	b.Coordinators = []kmsg.FindCoordinatorResponseCoordinator{{Key: "px-acme.~g.billing", NodeID: 1}, {Key: "acme.~g.billing", NodeID: 1}}
	// decodeAnswer's byte checks hold: no acme.~g. left in the answer.
	if a := groupResp(t, s, p, b).(*kmsg.FindCoordinatorResponse); len(a.Coordinators) != 1 || a.Coordinators[0].Key != "billing" {
		t.Fatalf("coordinators %+v", a.Coordinators)
	}
}
