package decide

import (
	"bytes"
	"math"
	"slices"
	"strings"
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

func subscription(version int16, topics []string, owned ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version, m.Topics, m.UserData = version, topics, []byte("sticky:orders")
	for _, o := range owned {
		m.OwnedPartitions = append(m.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: o, Partitions: []int32{0, 1}})
	}
	m.Generation = 3
	return m.AppendTo(nil)
}

func readSubscription(t *testing.T, b []byte) kmsg.ConsumerMemberMetadata {
	t.Helper()
	var m kmsg.ConsumerMemberMetadata
	if err := m.ReadFrom(b); err != nil {
		t.Fatalf("subscription %q: %v", b, err)
	}
	return m
}

func assignment(version int16, topics ...string) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	a.Version = version
	for i, tp := range topics {
		a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: tp, Partitions: []int32{int32(i)}})
	}
	return a.AppendTo(nil)
}

func assignedTopics(t *testing.T, b []byte) []string {
	t.Helper()
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		t.Fatalf("assignment %q: %v", b, err)
	}
	var out []string
	for _, tp := range a.Topics {
		out = append(out, tp.Topic)
	}
	return out
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
	for _, v := range []int16{4, 6} {
		for _, typ := range []int8{0, 1} {
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
		for _, v := range []int16{1, 3, 4, 6} {
			s := groupSession(t, c.recv)
			s.View.Transactions = c.txn
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.Version, r.CoordinatorType, r.CoordinatorKey, r.CoordinatorKeys = v, c.typ, "billing", []string{"billing", "other"}
			out, _, a, _ := groupReq(t, s, r)
			if out != Answer {
				t.Fatalf("type %d v%d: outcome %d", c.typ, v, out)
			}
			resp := a.(*kmsg.FindCoordinatorResponse)
			if v < 4 {
				wantCode(t, "FindCoordinator", resp.ErrorCode, c.want)
				continue
			}
			if len(resp.Coordinators) != 2 || resp.Coordinators[1].Key != "other" {
				t.Fatalf("coordinators %+v", resp.Coordinators)
			}
			for _, co := range resp.Coordinators {
				wantCode(t, "FindCoordinator "+co.Key, co.ErrorCode, c.want)
			}
		}
	}
}

// N1, N2: JoinGroup's consumer subscriptions mapped both ways; other
// protocol types untouched; a view without receive refused.
func TestJoinGroupConsumerProtocol(t *testing.T) {
	for _, v := range []int16{0, 5, 6, 7, 9} {
		s := groupSession(t, true)
		r := kmsg.NewPtrJoinGroupRequest()
		r.Version, r.Group, r.ProtocolType = v, "billing", "consumer"
		r.Protocols = []kmsg.JoinGroupRequestProtocol{
			{Name: "cooperative-sticky", Metadata: subscription(1, []string{"orders", "globex.orders", "audit", "nosuch"}, "orders", "payments")},
			{Name: "range", Metadata: subscription(3, []string{"audit"})},
		}
		out, fw, _, p := groupReq(t, s, r)
		if out != Forward {
			t.Fatalf("v%d: outcome %d", v, out)
		}
		jr := fw.(*kmsg.JoinGroupRequest)
		if jr.Group != "acme.~g.billing" {
			t.Fatalf("group %q forwarded", jr.Group)
		}
		m := readSubscription(t, jr.Protocols[0].Metadata)
		if !slices.Equal(m.Topics, []string{"acme.orders", "acme.audit"}) || len(m.OwnedPartitions) != 1 ||
			m.OwnedPartitions[0].Topic != "acme.orders" || string(m.UserData) != "sticky:orders" || m.Generation != -1 {
			t.Fatalf("subscription forwarded: %+v", m)
		}
		if m := readSubscription(t, jr.Protocols[1].Metadata); m.Version != 3 || !slices.Equal(m.Topics, []string{"acme.audit"}) || m.Generation != 3 {
			t.Fatalf("v3 subscription forwarded: %+v", m)
		}

		// The leader's answer: every member's subscription mapped back,
		// another tenant's topic (only the broker could put it there) left out.
		b := kmsg.NewPtrJoinGroupResponse()
		b.Generation, b.Protocol, b.LeaderID, b.MemberID = 4, kmsg.StringPtr("range"), "m1", "m1"
		if v >= 7 && v != 9 {
			b.ProtocolType = kmsg.StringPtr("consumer")
		}
		b.Members = []kmsg.JoinGroupResponseMember{
			{MemberID: "m1", ProtocolMetadata: subscription(1, []string{"acme.orders", "globex.orders"}, "acme.audit", "globex.payments")},
			{MemberID: "m2", ProtocolMetadata: []byte{0, 1, 0xff}},
		}
		a := groupResp(t, s, p, b).(*kmsg.JoinGroupResponse)
		m = readSubscription(t, a.Members[0].ProtocolMetadata)
		if !slices.Equal(m.Topics, []string{"orders"}) || len(m.OwnedPartitions) != 1 || m.OwnedPartitions[0].Topic != "audit" {
			t.Fatalf("v%d: subscription answered: %+v", v, m)
		}
		if m := readSubscription(t, a.Members[1].ProtocolMetadata); len(m.Topics) != 0 {
			t.Fatalf("unreadable subscription answered as %+v", m)
		}
	}

	// Another protocol type: the bytes cross as they are.
	s := groupSession(t, true)
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version, r.Group, r.ProtocolType = 9, "workers", "connect"
	raw := []byte("\x00\x01connect-metadata globex.orders")
	r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "sessioned", Metadata: raw}}
	fr := reqFrame(r, 1, "c")
	h, _ := codec.ParseRequestHeader(fr)
	var p Pending
	if out := s.Request(&h, fr, 2, testGrant, &p); out != Forward || !bytes.Contains(vecFrame(s), raw) {
		t.Fatalf("connect metadata not forwarded as it is: %d", out)
	}

	// A consumer subscription the gateway cannot read disconnects.
	r.ProtocolType = "consumer"
	r.Protocols[0].Metadata = []byte{0}
	fr = reqFrame(r, 1, "c")
	h, _ = codec.ParseRequestHeader(fr)
	if out := s.Request(&h, fr, 2, testGrant, &p); out != Disconnect {
		t.Fatalf("malformed subscription: outcome %d", out)
	}

	// No receive operation: refused by the gateway.
	for _, v := range []int16{2, 6, 7, 9} {
		s := groupSession(t, false)
		r := kmsg.NewPtrJoinGroupRequest()
		r.Version, r.Group, r.ProtocolType = v, "billing", "consumer"
		out, _, a, _ := groupReq(t, s, r)
		if out != Answer {
			t.Fatalf("JoinGroup without receive: outcome %d", out)
		}
		wantCode(t, "JoinGroup", a.(*kmsg.JoinGroupResponse).ErrorCode, kerr.GroupAuthorizationFailed)
	}
}

// N1, N2: SyncGroup's assignments mapped both ways, with and without the
// protocol type (v5+ / before v5).
func TestSyncGroupAssignments(t *testing.T) {
	for _, v := range []int16{0, 3, 4, 5} {
		s := groupSession(t, true)
		r := kmsg.NewPtrSyncGroupRequest()
		r.Version, r.Group, r.Generation, r.MemberID = v, "billing", 4, "m1"
		if v >= 5 {
			r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		}
		r.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{
			{MemberID: "m1", MemberAssignment: assignment(0, "orders", "audit")},
			{MemberID: "m2", MemberAssignment: assignment(3, "audit")},
			{MemberID: "m3"},
		}
		out, fw, _, p := groupReq(t, s, r)
		if out != Forward {
			t.Fatalf("v%d: outcome %d", v, out)
		}
		sr := fw.(*kmsg.SyncGroupRequest)
		if sr.Group != "acme.~g.billing" {
			t.Fatalf("group %q", sr.Group)
		}
		if got := assignedTopics(t, sr.GroupAssignment[0].MemberAssignment); !slices.Equal(got, []string{"acme.orders", "acme.audit"}) {
			t.Fatalf("v%d: assignment forwarded %q", v, got)
		}
		if got := assignedTopics(t, sr.GroupAssignment[1].MemberAssignment); !slices.Equal(got, []string{"acme.audit"}) {
			t.Fatalf("v%d: assignment forwarded %q", v, got)
		}
		if len(sr.GroupAssignment[2].MemberAssignment) != 0 {
			t.Fatal("an empty assignment was filled")
		}
		b := kmsg.NewPtrSyncGroupResponse()
		b.MemberAssignment = assignment(1, "acme.orders", "globex.orders", "acme.audit")
		if v >= 5 {
			b.ProtocolType, b.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		}
		a := groupResp(t, s, p, b).(*kmsg.SyncGroupResponse)
		if got := assignedTopics(t, a.MemberAssignment); !slices.Equal(got, []string{"orders", "audit"}) {
			t.Fatalf("v%d: assignment answered %q", v, got)
		}
	}
	// Another protocol type crosses as it is, both ways.
	s := groupSession(t, true)
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version, r.Group = 5, "workers"
	r.ProtocolType, r.Protocol = kmsg.StringPtr("connect"), kmsg.StringPtr("sessioned")
	raw := assignment(0, "orders") // shaped like a consumer assignment, yet connect's
	r.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: "m1", MemberAssignment: raw}}
	_, fw, _, p := groupReq(t, s, r)
	if !bytes.Equal(fw.(*kmsg.SyncGroupRequest).GroupAssignment[0].MemberAssignment, raw) {
		t.Fatal("connect assignment rewritten")
	}
	b := kmsg.NewPtrSyncGroupResponse()
	b.ProtocolType, b.MemberAssignment = kmsg.StringPtr("connect"), raw
	if a := groupResp(t, s, p, b).(*kmsg.SyncGroupResponse); !bytes.Equal(a.MemberAssignment, raw) {
		t.Fatal("connect assignment rewritten in the answer")
	}
	// Before v5, bytes that are not exactly a consumer assignment cross as they are.
	r.Version = 3
	odd := append(assignment(0, "orders"), 0xee)
	r.GroupAssignment[0].MemberAssignment = odd
	_, fw, _, _ = groupReq(t, s, r)
	if !bytes.Equal(fw.(*kmsg.SyncGroupRequest).GroupAssignment[0].MemberAssignment, odd) {
		t.Fatal("a non-consumer assignment (v3) rewritten")
	}
	// A consumer assignment the gateway cannot read (v5) disconnects.
	r.Version = 5
	r.ProtocolType = kmsg.StringPtr("consumer")
	r.GroupAssignment[0].MemberAssignment = []byte{0, 0, 0x7f}
	fr := reqFrame(r, 1, "c")
	h, _ := codec.ParseRequestHeader(fr)
	var pp Pending
	if out := s.Request(&h, fr, 2, testGrant, &pp); out != Disconnect {
		t.Fatalf("malformed consumer assignment: outcome %d", out)
	}
}

// D6: without a receive operation every group API is refused by the
// gateway with GROUP_AUTHORIZATION_FAILED, and nothing is forwarded.
func TestGroupsNeedReceive(t *testing.T) {
	s := groupSession(t, false)
	check := func(req kmsg.Request, code func(kmsg.Response) []int16) {
		t.Helper()
		out, _, a, _ := groupReq(t, s, req)
		if out != Answer {
			t.Fatalf("%s v%d without receive: outcome %d", Name(req.Key()), req.GetVersion(), out)
		}
		codes := code(a)
		if len(codes) == 0 {
			t.Fatalf("%s: no code answered", Name(req.Key()))
		}
		for _, c := range codes {
			wantCode(t, Name(req.Key()), c, kerr.GroupAuthorizationFailed)
		}
	}
	for _, v := range []int16{0, 4} {
		r := kmsg.NewPtrHeartbeatRequest()
		r.Version, r.Group = v, "billing"
		check(r, func(a kmsg.Response) []int16 { return []int16{a.(*kmsg.HeartbeatResponse).ErrorCode} })
	}
	for _, v := range []int16{0, 3, 5} {
		r := kmsg.NewPtrLeaveGroupRequest()
		r.Version, r.Group, r.MemberID = v, "billing", "m1"
		r.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m1"}}
		check(r, func(a kmsg.Response) []int16 { return []int16{a.(*kmsg.LeaveGroupResponse).ErrorCode} })
	}
	for _, v := range []int16{0, 5} {
		r := kmsg.NewPtrSyncGroupRequest()
		r.Version, r.Group = v, "billing"
		check(r, func(a kmsg.Response) []int16 { return []int16{a.(*kmsg.SyncGroupResponse).ErrorCode} })
	}
	for _, v := range []int16{0, 6} {
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Version, r.Groups = v, []string{"billing", "other"}
		check(r, func(a kmsg.Response) []int16 {
			var cs []int16
			for _, g := range a.(*kmsg.DescribeGroupsResponse).Groups {
				cs = append(cs, g.ErrorCode)
			}
			return cs
		})
	}
	for _, v := range []int16{0, 5} {
		r := kmsg.NewPtrListGroupsRequest()
		r.Version = v
		check(r, func(a kmsg.Response) []int16 { return []int16{a.(*kmsg.ListGroupsResponse).ErrorCode} })
	}
	for _, v := range []int16{0, 2, 8, 9} {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version, r.Group = v, "billing"
		tp := kmsg.NewOffsetCommitRequestTopic()
		tp.Topic = "orders"
		tp.Partitions = []kmsg.OffsetCommitRequestTopicPartition{kmsg.NewOffsetCommitRequestTopicPartition()}
		r.Topics = append(r.Topics, tp)
		check(r, func(a kmsg.Response) []int16 {
			var cs []int16
			for _, tp := range a.(*kmsg.OffsetCommitResponse).Topics {
				for _, pp := range tp.Partitions {
					cs = append(cs, pp.ErrorCode)
				}
			}
			return cs
		})
	}
	for _, v := range []int16{1, 2, 7} {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version, r.Group = v, "billing"
		r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{0}}}
		check(r, func(a kmsg.Response) []int16 {
			resp := a.(*kmsg.OffsetFetchResponse)
			cs := []int16{resp.Topics[0].Partitions[0].ErrorCode}
			if v >= 2 {
				cs = append(cs, resp.ErrorCode)
			}
			return cs
		})
	}
	for _, v := range []int16{8, 9} {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version = v
		r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "billing"}, {Group: "other"}}
		check(r, func(a kmsg.Response) []int16 {
			var cs []int16
			for _, g := range a.(*kmsg.OffsetFetchResponse).Groups {
				cs = append(cs, g.ErrorCode)
			}
			return cs
		})
	}
	for _, v := range []int16{0, 3, 4, 6} {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.Version, r.CoordinatorKey, r.CoordinatorKeys = v, "billing", []string{"billing"}
		check(r, func(a kmsg.Response) []int16 {
			resp := a.(*kmsg.FindCoordinatorResponse)
			if v < 4 {
				return []int16{resp.ErrorCode}
			}
			return []int16{resp.Coordinators[0].ErrorCode}
		})
	}
	// JoinGroup: TestJoinGroupConsumerProtocol.
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

// N1, N2: OffsetCommit: topics mapped both ways; refused topics answered
// by the gateway and merged.
func TestOffsetCommitMapped(t *testing.T) {
	for _, v := range []int16{0, 2, 7, 8, 9} {
		s := groupSession(t, true)
		s.View.topics["audit"].receive = false // audit: in the view, not opened for receive
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version, r.Group, r.Generation, r.MemberID = v, "billing", 3, "m1"
		for _, name := range []string{"orders", "audit", "globex.orders"} {
			tp := kmsg.NewOffsetCommitRequestTopic()
			tp.Topic = name
			for i := int32(0); i < 2; i++ {
				pp := kmsg.NewOffsetCommitRequestTopicPartition()
				pp.Partition, pp.Offset = i, 100+int64(i)
				tp.Partitions = append(tp.Partitions, pp)
			}
			r.Topics = append(r.Topics, tp)
		}
		out, fw, _, p := groupReq(t, s, r)
		oc := fw.(*kmsg.OffsetCommitRequest)
		if out != Forward || oc.Group != "acme.~g.billing" || len(oc.Topics) != 1 || oc.Topics[0].Topic != "acme.orders" || oc.Topics[0].Partitions[1].Offset != 101 {
			t.Fatalf("v%d: forwarded %+v", v, oc)
		}
		b := kmsg.NewPtrOffsetCommitResponse()
		for _, name := range []string{"acme.orders", "globex.orders"} {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = name
			rt.Partitions = []kmsg.OffsetCommitResponseTopicPartition{{Partition: 0}, {Partition: 1}}
			b.Topics = append(b.Topics, rt)
		}
		a := groupResp(t, s, p, b).(*kmsg.OffsetCommitResponse)
		got := map[string][]int16{}
		for _, tp := range a.Topics {
			for _, pp := range tp.Partitions {
				got[tp.Topic] = append(got[tp.Topic], pp.ErrorCode)
			}
		}
		tf, ut := kerr.TopicAuthorizationFailed.Code, kerr.UnknownTopicOrPartition.Code
		if len(got) != 3 || !slices.Equal(got["orders"], []int16{0, 0}) || !slices.Equal(got["audit"], []int16{tf, tf}) ||
			!slices.Equal(got["globex.orders"], []int16{ut, ut}) {
			t.Fatalf("v%d: answered %v", v, got)
		}
	}
	// Only refused topics: answered by the gateway.
	s := groupSession(t, true)
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version, r.Group = 8, "billing"
	r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "nosuch", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 4}}}}
	out, _, a, _ := groupReq(t, s, r)
	if out != Answer {
		t.Fatalf("outcome %d", out)
	}
	wantCode(t, "OffsetCommit nosuch", a.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
}

// N1, N2: OffsetFetch, single group (v0-v7) and batched (v8+), topics asked
// or all (null): the answer holds the view's topics only, by short name.
func TestOffsetFetchMapped(t *testing.T) {
	brokerTopics := func() []kmsg.OffsetFetchResponseTopic {
		var out []kmsg.OffsetFetchResponseTopic
		for _, name := range []string{"acme.orders", "globex.orders", "acme.audit"} {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = name
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Offset, rp.Metadata = 42, kmsg.StringPtr("m")
			rt.Partitions = append(rt.Partitions, rp)
			out = append(out, rt)
		}
		return out
	}
	names := func(ts []kmsg.OffsetFetchResponseTopic) map[string]int16 {
		m := map[string]int16{}
		for _, tp := range ts {
			m[tp.Topic] = tp.Partitions[0].ErrorCode
		}
		return m
	}
	for _, v := range []int16{1, 2, 5, 7} {
		s := groupSession(t, true)
		// Topics asked.
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version, r.Group = v, "billing"
		r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{0}}, {Topic: "globex.orders", Partitions: []int32{0, 1}}}
		out, fw, _, p := groupReq(t, s, r)
		of := fw.(*kmsg.OffsetFetchRequest)
		if out != Forward || of.Group != "acme.~g.billing" || len(of.Topics) != 1 || of.Topics[0].Topic != "acme.orders" {
			t.Fatalf("v%d: forwarded %+v", v, of)
		}
		b := kmsg.NewPtrOffsetFetchResponse()
		b.Topics = brokerTopics()[:1]
		a := groupResp(t, s, p, b).(*kmsg.OffsetFetchResponse)
		if got := names(a.Topics); len(got) != 2 || got["orders"] != 0 || got["globex.orders"] != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("v%d: answered %v", v, got)
		}
		if v < 2 {
			continue
		}
		// All the group's topics.
		r.Topics = nil
		out, fw, _, p = groupReq(t, s, r)
		if out != Forward || fw.(*kmsg.OffsetFetchRequest).Topics != nil {
			t.Fatalf("v%d: null topics forwarded as %+v", v, fw)
		}
		b.Topics = brokerTopics()
		a = groupResp(t, s, p, b).(*kmsg.OffsetFetchResponse)
		if got := names(a.Topics); len(got) != 2 || got["orders"] != 0 || got["audit"] != 0 {
			t.Fatalf("v%d: all topics answered %v", v, got)
		}
	}
	for _, v := range []int16{8, 9} {
		s := groupSession(t, true)
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version = v
		r.Groups = []kmsg.OffsetFetchRequestGroup{
			{Group: "billing", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "orders", Partitions: []int32{0}}, {Topic: "nosuch", Partitions: []int32{3}}}},
			{Group: "all"},
			{Group: "refused", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "payments", Partitions: []int32{1}}}},
		}
		out, fw, _, p := groupReq(t, s, r)
		of := fw.(*kmsg.OffsetFetchRequest)
		if out != Forward || len(of.Groups) != 3 || of.Groups[0].Group != "acme.~g.billing" || len(of.Groups[0].Topics) != 1 ||
			of.Groups[0].Topics[0].Topic != "acme.orders" || of.Groups[1].Topics != nil || of.Groups[2].Group != "acme.~g.refused" || len(of.Groups[2].Topics) != 0 {
			t.Fatalf("v%d: forwarded %+v", v, of)
		}
		b := kmsg.NewPtrOffsetFetchResponse()
		for _, g := range []string{"acme.~g.refused", "acme.~g.billing", "acme.~g.all", "globex.~g.all"} {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = g
			if g != "acme.~g.refused" {
				for _, tp := range brokerTopics() {
					gt := kmsg.NewOffsetFetchResponseGroupTopic()
					gt.Topic = tp.Topic
					gt.Partitions = []kmsg.OffsetFetchResponseGroupTopicPartition{{Offset: 42}}
					rg.Topics = append(rg.Topics, gt)
				}
			}
			b.Groups = append(b.Groups, rg)
		}
		a := groupResp(t, s, p, b).(*kmsg.OffsetFetchResponse)
		got := map[string]map[string]int16{}
		for _, g := range a.Groups {
			got[g.Group] = map[string]int16{}
			for _, tp := range g.Topics {
				got[g.Group][tp.Topic] = tp.Partitions[0].ErrorCode
			}
		}
		want := map[string]map[string]int16{
			"billing": {"orders": 0, "audit": 0, "nosuch": kerr.UnknownTopicOrPartition.Code},
			"all":     {"orders": 0, "audit": 0},
			"refused": {"payments": kerr.UnknownTopicOrPartition.Code},
		}
		if len(got) != len(want) {
			t.Fatalf("v%d: groups answered %v", v, got)
		}
		for g, ts := range want {
			for tp, c := range ts {
				if gc, ok := got[g][tp]; !ok || gc != c {
					t.Fatalf("v%d: group %s topic %s: %v", v, g, tp, got)
				}
			}
		}
		// Every topic refused: answered by the gateway.
		r.Groups = r.Groups[2:]
		r.Groups[0].Group = "refused"
		out, _, ans, _ := groupReq(t, s, r)
		if out != Answer {
			t.Fatalf("v%d: outcome %d", v, out)
		}
		ag := ans.(*kmsg.OffsetFetchResponse).Groups
		if len(ag) != 1 || ag[0].Group != "refused" || ag[0].Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("v%d: local answer %+v", v, ag)
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

// A group id that no longer fits a Kafka string once prefixed is refused,
// never forwarded with a wrapped length.
func TestLongGroupIDRefused(t *testing.T) {
	s := groupSession(t, true)
	long := strings.Repeat("g", codec.MaxString-4)
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version, r.Group = 3, long
	out, _, a, _ := groupReq(t, s, r)
	if out != Answer {
		t.Fatalf("outcome %d", out)
	}
	wantCode(t, "Heartbeat", a.(*kmsg.HeartbeatResponse).ErrorCode, kerr.InvalidGroupID)
}

// The consumer protocol's bytes: round trips, versions past kmsg's, and the
// exactness test used before SyncGroup v5.
func TestConsumerProtocolBytes(t *testing.T) {
	s := groupSession(t, true)
	for v := int16(0); v <= 3; v++ {
		in := subscription(v, []string{"orders", "audit"}, "orders")
		phys, ok := mapSubscription(in, s.toPhysical)
		if !ok {
			t.Fatalf("v%d not read", v)
		}
		back, _ := mapSubscription(phys, s.toShort)
		if !bytes.Equal(back, in) {
			t.Fatalf("v%d subscription does not round-trip:\n%q\n%q", v, in, back)
		}
		as := assignment(v, "orders", "audit")
		phys, ok = mapAssignment(as, s.toPhysical, true)
		if !ok {
			t.Fatalf("v%d assignment not exact", v)
		}
		if back, ok := mapAssignment(phys, s.toShort, true); !ok || !bytes.Equal(back, as) {
			t.Fatalf("v%d assignment does not round-trip", v)
		}
	}
	// A future version: read as v3, written as v3.
	in := append(subscription(3, []string{"orders"}), 9, 9, 9)
	in[1] = 7
	out, ok := mapSubscription(in, s.toPhysical)
	if m := readSubscription(t, out); !ok || m.Version != 3 || !slices.Equal(m.Topics, []string{"acme.orders"}) {
		t.Fatalf("v7 subscription: %+v", m)
	}
	// Empty user data (length 0) and null (length -1) are both exact.
	a := kmsg.NewConsumerMemberAssignment()
	a.UserData = []byte{}
	if _, ok := mapAssignment(a.AppendTo(nil), s.toPhysical, true); !ok {
		t.Fatal("an assignment with empty user data is not exact")
	}
	for _, bad := range [][]byte{nil, {0}, {0, 0, 0, 0, 0, 9}, append(assignment(0, "orders"), 1)} {
		if _, ok := mapAssignment(bad, s.toPhysical, true); ok {
			t.Fatalf("%q read as an exact assignment", bad)
		}
	}
}

// groupSeeds are group requests for FuzzSessionRequest: each group API at
// its edges, with acme's, other tenants' and unknown names.
func groupSeeds() []kmsg.Request {
	var out []kmsg.Request
	sub := subscription(1, seedTopics, "orders", "globex.orders")
	for _, v := range []int16{0, 3, 4, 6} {
		for _, typ := range []int8{0, 1, 2} {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.Version, r.CoordinatorType, r.CoordinatorKey, r.CoordinatorKeys = v, typ, "billing", []string{"billing", "globex.~g.b"}
			out = append(out, r)
		}
	}
	for _, v := range []int16{0, 5, 9} {
		for _, pt := range []string{"consumer", "connect"} {
			r := kmsg.NewPtrJoinGroupRequest()
			r.Version, r.Group, r.ProtocolType = v, "billing", pt
			r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: sub}}
			out = append(out, r)
		}
	}
	for _, v := range []int16{0, 3, 5} {
		r := kmsg.NewPtrSyncGroupRequest()
		r.Version, r.Group = v, "billing"
		if v >= 5 {
			r.ProtocolType = kmsg.StringPtr("consumer")
		}
		r.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: "m", MemberAssignment: assignment(0, seedTopics...)}}
		out = append(out, r)
	}
	for _, v := range []int16{0, 4} {
		r := kmsg.NewPtrHeartbeatRequest()
		r.Version, r.Group = v, "billing"
		out = append(out, r)
	}
	for _, v := range []int16{0, 5} {
		r := kmsg.NewPtrLeaveGroupRequest()
		r.Version, r.Group, r.Members = v, "billing", []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
		out = append(out, r)
	}
	for _, v := range []int16{0, 6} {
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Version, r.Groups = v, []string{"billing", "globex.~g.billing"}
		out = append(out, r)
	}
	for _, v := range []int16{0, 5} {
		r := kmsg.NewPtrListGroupsRequest()
		r.Version = v
		out = append(out, r)
	}
	for _, v := range []int16{0, 6, 9} {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version, r.Group = v, "billing"
		for _, name := range seedTopics {
			r.Topics = append(r.Topics, kmsg.OffsetCommitRequestTopic{Topic: name, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0}}})
		}
		out = append(out, r)
	}
	for _, v := range []int16{1, 7, 9} {
		for _, all := range []bool{false, true} {
			r := kmsg.NewPtrOffsetFetchRequest()
			r.Version, r.Group = v, "billing"
			g := kmsg.OffsetFetchRequestGroup{Group: "billing"}
			if !all || v < 2 {
				for _, name := range seedTopics {
					r.Topics = append(r.Topics, kmsg.OffsetFetchRequestTopic{Topic: name, Partitions: []int32{0}})
					g.Topics = append(g.Topics, kmsg.OffsetFetchRequestGroupTopic{Topic: name, Partitions: []int32{0}})
				}
			}
			r.Groups = []kmsg.OffsetFetchRequestGroup{g, {Group: "other"}}
			out = append(out, r)
		}
	}
	return out
}

// groupFuzzSeeds are request frames of the group family for
// FuzzSessionRequest's corpus (servedSeeds), and checkGroupForwarded the
// invariants of their forwarded requests (checkRequest's type switch). The
// fuzz target itself lives in fuzz_test.go.
func groupFuzzSeeds() [][]byte {
	var out [][]byte
	for _, r := range groupSeeds() {
		out = append(out, reqFrame(r, 7, "app-1"))
	}
	return out
}

// checkGroupForwarded holds a forwarded group request (as the broker reads
// it) to its invariants; false when req is not a group request.
func checkGroupForwarded(t *testing.T, s *Session, req kmsg.Request) bool {
	t.Helper()
	group := func(g string) {
		if !strings.HasPrefix(g, s.View.Cluster.Prefix+s.View.Tenant+".~g.") {
			t.Fatalf("%s: group %q forwarded", Name(req.Key()), g)
		}
	}
	topic := func(name string) {
		if _, ok := s.View.Short(name); !ok {
			t.Fatalf("%s: topic %q forwarded", Name(req.Key()), name)
		}
	}
	if !s.View.CanReceive {
		if r, ok := req.(*kmsg.FindCoordinatorRequest); !ok || r.CoordinatorType != 1 {
			t.Fatalf("%s forwarded for a view without receive", Name(req.Key()))
		}
	}
	switch r := req.(type) {
	case *kmsg.FindCoordinatorRequest:
		keys := r.CoordinatorKeys
		if r.Version < 4 {
			keys = []string{r.CoordinatorKey}
		}
		for _, k := range keys {
			switch r.CoordinatorType {
			case 0:
				group(k)
			case 1:
				if !s.View.Transactions || !strings.HasPrefix(k, s.View.Cluster.Prefix+s.View.Tenant+".~t.") {
					t.Fatalf("transaction key %q forwarded", k)
				}
			default:
				t.Fatalf("coordinator type %d forwarded", r.CoordinatorType)
			}
		}
	case *kmsg.JoinGroupRequest:
		group(r.Group)
		if r.ProtocolType == consumerProtocol {
			for _, p := range r.Protocols {
				var m kmsg.ConsumerMemberMetadata
				if err := m.ReadFrom(p.Metadata); err != nil {
					t.Fatalf("JoinGroup: subscription forwarded unreadable: %v", err)
				}
				for _, tp := range m.Topics {
					topic(tp)
				}
				for _, o := range m.OwnedPartitions {
					topic(o.Topic)
				}
			}
		}
	case *kmsg.SyncGroupRequest:
		group(r.Group)
		if r.ProtocolType != nil && *r.ProtocolType == consumerProtocol {
			for _, a := range r.GroupAssignment {
				if len(a.MemberAssignment) == 0 {
					continue
				}
				var as kmsg.ConsumerMemberAssignment
				if err := as.ReadFrom(a.MemberAssignment); err != nil {
					t.Fatalf("SyncGroup: assignment forwarded unreadable: %v", err)
				}
				for _, tp := range as.Topics {
					topic(tp.Topic)
				}
			}
		}
	case *kmsg.HeartbeatRequest:
		group(r.Group)
	case *kmsg.LeaveGroupRequest:
		group(r.Group)
	case *kmsg.DescribeGroupsRequest:
		for _, g := range r.Groups {
			group(g)
		}
		if r.IncludeAuthorizedOperations {
			t.Fatal("DescribeGroups asks for authorized operations")
		}
	case *kmsg.ListGroupsRequest:
	case *kmsg.OffsetCommitRequest:
		group(r.Group)
		for _, tp := range r.Topics {
			topic(tp.Topic)
		}
	case *kmsg.OffsetFetchRequest:
		if r.Version < 8 {
			group(r.Group)
			for _, tp := range r.Topics {
				topic(tp.Topic)
			}
		}
		for _, g := range r.Groups {
			group(g.Group)
			for _, tp := range g.Topics {
				topic(tp.Topic)
			}
		}
	default:
		return false
	}
	return true
}

// The seeds reach a forward of every group key, and each forward holds
// its invariants; without receive, nothing but transaction coordinators
// is forwarded.
func TestGroupSeedsForward(t *testing.T) {
	forwarded := map[int16]int{}
	for _, recv := range []bool{true, false} {
		for _, txn := range []bool{true, false} {
			s := groupSession(t, recv)
			s.View.Transactions = txn
			for _, req := range groupSeeds() {
				fr := reqFrame(req, 3, "app")
				h, err := codec.ParseRequestHeader(fr)
				if err != nil {
					t.Fatal(err)
				}
				var p Pending
				asked[&p] = fr
				out := s.Request(&h, fr, 5, testGrant, &p)
				if out == Disconnect {
					t.Fatalf("%s v%d: outcome %d (%s)", Name(h.Key), h.Version, out, p.Cause)
				}
				if out != Forward {
					decodeAnswer(t, s, &p)
					continue
				}
				b := vecFrame(s)
				h2, _ := codec.ParseRequestHeader(b)
				fw := kmsg.RequestForKey(h.Key)
				fw.SetVersion(h.Version)
				if err := fw.ReadFrom(b[h2.BodyOffset:]); err != nil {
					t.Fatal(err)
				}
				if !checkGroupForwarded(t, s, fw) {
					t.Fatalf("%T: not a group request", fw)
				}
				if recv {
					forwarded[h.Key]++
				}
			}
		}
	}
	for k := int16(8); k <= 16; k++ {
		if forwarded[k] == 0 {
			t.Errorf("no seed forwards %s", Name(k))
		}
	}
}

// Broker answers that do not decode are errors (the connection closes),
// never a panic.
func TestGroupAnswersMalformed(t *testing.T) {
	s := groupSession(t, true)
	for k := int16(8); k <= 16; k++ {
		lo, hi, ok := s.Versions.Range(k)
		if !ok {
			t.Fatalf("%s not announced", Name(k))
		}
		for v := lo; v <= hi; v++ {
			p := &Pending{Key: k, Version: v}
			fr := codec.AppendResponseHeader(nil, k, v, 1)
			fr = append(fr, 0xff, 0xff, 0xff)
			if err := s.Response(p, fr); err == nil {
				// Some short bodies decode (arrays of length -1): fine, if the answer does.
				decodeAnswer(t, s, p)
			}
		}
	}
}

// Caps: OffsetCommit and OffsetFetch never announced past v9 (topic ids).
func TestGroupVersionCaps(t *testing.T) {
	v := fuzzVersions()
	want := map[int16][2]int16{8: {0, 9}, 9: {0, 9}, 10: {0, 6}, 11: {0, 9}, 12: {0, 4}, 13: {0, 5}, 14: {0, 5}, 15: {0, 6}, 16: {0, 5}}
	for k, r := range want {
		lo, hi, ok := v.Range(k)
		if !ok || lo != r[0] || hi != r[1] {
			t.Errorf("%s announced %d-%d (%v), want %d-%d", Name(k), lo, hi, ok, r[0], r[1])
		}
	}
}

// A refusal is never built much larger than its request: past maxRefused
// keys, groups or partitions, the request disconnects.
func TestGroupRefusalsBounded(t *testing.T) {
	many := make([]string, maxRefused+1)
	s := groupSession(t, false)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKeys = 4, many
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups = 5, many
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version, of.Group = 7, "billing"
	of.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: make([]int32, maxRefused)}}
	for _, r := range []kmsg.Request{fc, dg, of} {
		fr := reqFrame(r, 1, "c")
		h, _ := codec.ParseRequestHeader(fr)
		var p Pending
		if out := s.Request(&h, fr, 2, testGrant, &p); out != Disconnect {
			t.Fatalf("%s with %d refused: outcome %d", Name(h.Key), maxRefused+1, out)
		}
	}
	// With receive, the same OffsetFetch of an unknown topic: the same bound.
	s = groupSession(t, true)
	of.Topics[0].Topic = "nosuch"
	fr := reqFrame(of, 1, "c")
	h, _ := codec.ParseRequestHeader(fr)
	var p Pending
	if out := s.Request(&h, fr, 2, testGrant, &p); out != Disconnect {
		t.Fatalf("OffsetFetch with %d refused partitions: outcome %d", maxRefused, out)
	}
	// Below the bound: answered.
	of.Topics[0].Partitions = of.Topics[0].Partitions[:100]
	fr = reqFrame(of, 1, "c")
	h, _ = codec.ParseRequestHeader(fr)
	if out := s.Request(&h, fr, 2, testGrant, &p); out != Answer {
		t.Fatalf("OffsetFetch with 100 refused partitions: outcome %d", out)
	}
}

// The batched OffsetFetch names a group twice: each answer gets its own
// refusals, once.
func TestOffsetFetchSameGroupTwice(t *testing.T) {
	s := groupSession(t, true)
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 8
	r.Groups = []kmsg.OffsetFetchRequestGroup{
		{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "orders", Partitions: []int32{0}}, {Topic: "x", Partitions: []int32{1}}}},
		{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "orders", Partitions: []int32{0}}, {Topic: "y", Partitions: []int32{2}}}},
	}
	_, _, _, p := groupReq(t, s, r)
	b := kmsg.NewPtrOffsetFetchResponse()
	for range 2 {
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = "acme.~g.g"
		rg.Topics = []kmsg.OffsetFetchResponseGroupTopic{{Topic: "acme.orders", Partitions: []kmsg.OffsetFetchResponseGroupTopicPartition{{Offset: 1}}}}
		b.Groups = append(b.Groups, rg)
	}
	a := groupResp(t, s, p, b).(*kmsg.OffsetFetchResponse)
	var got []string
	for _, g := range a.Groups {
		var ts []string
		for _, tp := range g.Topics {
			ts = append(ts, tp.Topic)
		}
		got = append(got, g.Group+":"+strings.Join(ts, ","))
	}
	if !slices.Equal(got, []string{"g:orders,x", "g:orders,y"}) {
		t.Fatalf("answered %q", got)
	}
}

// Fuzzing of the group answers' rewriters:
//
//	go test ./decide -run '^$' -fuzz '^FuzzGroupResponse$' -fuzztime 20s
//
// Whatever the broker answers, the rewrite does not panic, and what it
// writes decodes and holds only the view's topics by short name, the
// tenant's groups by short name, no ClientHost, no broker words, and
// coordinators renamed.
func FuzzGroupResponse(f *testing.F) {
	add := func(resp kmsg.Response, v int16, consumer bool) {
		resp.SetVersion(v)
		f.Add(byte(resp.Key()), byte(v), consumer, resp.AppendTo(nil))
	}
	sub := subscription(1, []string{"acme.orders", "globex.orders"}, "acme.audit")
	as := assignment(0, "acme.orders", "globex.orders")
	for _, v := range []int16{0, 3, 4, 6} {
		r := kmsg.NewPtrFindCoordinatorResponse()
		r.NodeID, r.Host, r.Port = 1, "10.9.8.7", 9
		r.Coordinators = []kmsg.FindCoordinatorResponseCoordinator{{Key: "acme.~g.b", Host: "10.9.8.7"}, {Key: "globex.~g.b"}}
		add(r, v, false)
	}
	for _, v := range []int16{0, 6, 9} {
		r := kmsg.NewPtrJoinGroupResponse()
		r.Members = []kmsg.JoinGroupResponseMember{{MemberID: "m", ProtocolMetadata: sub}}
		add(r, v, true)
	}
	for _, v := range []int16{0, 5} {
		r := kmsg.NewPtrSyncGroupResponse()
		r.MemberAssignment = as
		if v >= 5 {
			r.ProtocolType = kmsg.StringPtr("consumer")
		}
		add(r, v, false)
	}
	for _, v := range []int16{0, 6} {
		r := kmsg.NewPtrDescribeGroupsResponse()
		r.Groups = []kmsg.DescribeGroupsResponseGroup{{Group: "acme.~g.b", ProtocolType: "consumer", Members: []kmsg.DescribeGroupsResponseGroupMember{
			{MemberID: "m", ClientID: "acme.c", ClientHost: "h", ProtocolMetadata: sub, MemberAssignment: as}}}, {Group: "globex.~g.b"}}
		add(r, v, false)
	}
	for _, v := range []int16{0, 5} {
		r := kmsg.NewPtrListGroupsResponse()
		r.Groups = []kmsg.ListGroupsResponseGroup{{Group: "acme.~g.b"}, {Group: "globex.~g.b"}}
		add(r, v, false)
	}
	for _, v := range []int16{0, 9} {
		r := kmsg.NewPtrOffsetCommitResponse()
		r.Topics = []kmsg.OffsetCommitResponseTopic{{Topic: "acme.orders", Partitions: []kmsg.OffsetCommitResponseTopicPartition{{}}}, {Topic: "globex.orders"}}
		add(r, v, false)
	}
	for _, v := range []int16{1, 7, 9} {
		r := kmsg.NewPtrOffsetFetchResponse()
		r.Topics = []kmsg.OffsetFetchResponseTopic{{Topic: "acme.orders"}, {Topic: "globex.orders"}}
		r.Groups = []kmsg.OffsetFetchResponseGroup{{Group: "acme.~g.b", Topics: []kmsg.OffsetFetchResponseGroupTopic{{Topic: "acme.audit"}, {Topic: "globex.orders"}}}, {Group: "globex.~g.b"}}
		add(r, v, false)
	}
	for _, v := range []int16{0, 4} {
		add(kmsg.NewPtrHeartbeatResponse(), v, false)
	}
	for _, v := range []int16{0, 5} {
		r := kmsg.NewPtrLeaveGroupResponse()
		r.Members = []kmsg.LeaveGroupResponseMember{{MemberID: "m"}}
		add(r, v, false)
	}

	f.Fuzz(func(t *testing.T, key, version byte, consumer bool, body []byte) {
		k, v := int16(8+key%9), int16(version)
		s := groupSession(t, true)
		lo, hi, _ := s.Versions.Range(k)
		if v < lo || v > hi {
			return
		}
		p := &Pending{Key: k, Version: v, ClientCorr: 3, UpCorr: 4}
		if consumer && k == 11 {
			p.consumer = true
		}
		fr := codec.AppendResponseHeader(nil, k, v, 4)
		if err := s.Response(p, append(fr, body...)); err != nil {
			return // the connection closes
		}
		b := vecFrame(s)
		corr, rb, err := codec.ParseResponseHeader(b, k, v)
		if err != nil || corr != 3 {
			t.Fatalf("answer header: %d %v", corr, err)
		}
		resp := kmsg.ResponseForKey(k)
		resp.SetVersion(v)
		if err := resp.ReadFrom(rb); err != nil {
			t.Fatalf("answer to %s v%d does not decode: %v", Name(k), v, err)
		}
		if len(b) > 2*len(body)+64<<10 {
			t.Fatalf("answer of %d bytes for a broker answer of %d", len(b), len(body))
		}
		checkGroupAnswer(t, resp, body, consumer && k == 11)
	})
}

// checkGroupAnswer holds a group answer to its invariants: topics are the
// view's short names ("orders", "audit"), groups were the tenant's in the
// broker's answer (brokerBody), no ClientHost, no broker words, no
// coordinator but the advertised one. consumer: the JoinGroup asked with
// the consumer protocol.
func checkGroupAnswer(t *testing.T, resp kmsg.Response, brokerBody []byte, consumer bool) {
	t.Helper()
	topic := func(name string) {
		if name != "orders" && name != "audit" {
			t.Fatalf("%T: topic %q answered", resp, name)
		}
	}
	group := func(name string) {
		if !bytes.Contains(brokerBody, []byte("acme.~g."+name)) {
			t.Fatalf("%T: group %q answered, not the tenant's", resp, name)
		}
	}
	coord := func(host string, port int32) {
		if (host != "gw.example" || port != 9092) && (host != "" || port != -1) {
			t.Fatalf("coordinator %s:%d answered", host, port)
		}
	}
	subTopics := func(meta []byte) {
		if len(meta) == 0 {
			return
		}
		var m kmsg.ConsumerMemberMetadata
		if err := m.ReadFrom(meta); err != nil {
			t.Fatalf("subscription answered unreadable: %v", err)
		}
		for _, tp := range m.Topics {
			topic(tp)
		}
		for _, o := range m.OwnedPartitions {
			topic(o.Topic)
		}
	}
	asTopics := func(meta []byte) {
		if len(meta) == 0 {
			return
		}
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(meta); err != nil {
			t.Fatalf("assignment answered unreadable: %v", err)
		}
		for _, tp := range a.Topics {
			topic(tp.Topic)
		}
	}
	switch r := resp.(type) {
	case *kmsg.FindCoordinatorResponse:
		if r.ErrorMessage != nil {
			t.Fatal("broker words answered")
		}
		if r.Version < 4 {
			coord(r.Host, r.Port)
		}
		for _, c := range r.Coordinators {
			if c.ErrorMessage != nil {
				t.Fatal("broker words answered")
			}
			coord(c.Host, c.Port)
			if !bytes.Contains(brokerBody, []byte("acme.~g."+c.Key)) && !bytes.Contains(brokerBody, []byte("acme.~t."+c.Key)) {
				t.Fatalf("coordinator key %q answered, not the tenant's", c.Key)
			}
		}
	case *kmsg.JoinGroupResponse:
		if r.ProtocolType != nil {
			consumer = *r.ProtocolType == consumerProtocol
		}
		for _, m := range r.Members {
			if consumer {
				subTopics(m.ProtocolMetadata)
			}
		}
	case *kmsg.SyncGroupResponse:
		if r.ProtocolType != nil && *r.ProtocolType == consumerProtocol {
			asTopics(r.MemberAssignment)
		}
	case *kmsg.DescribeGroupsResponse:
		for _, g := range r.Groups {
			group(g.Group)
			if g.ErrorMessage != nil {
				t.Fatal("broker words answered")
			}
			for _, m := range g.Members {
				if m.ClientHost != "" {
					t.Fatalf("ClientHost %q answered", m.ClientHost)
				}
				if g.ProtocolType == consumerProtocol {
					subTopics(m.ProtocolMetadata)
					asTopics(m.MemberAssignment)
				}
			}
		}
	case *kmsg.ListGroupsResponse:
		for _, g := range r.Groups {
			group(g.Group)
		}
	case *kmsg.OffsetCommitResponse:
		for _, tp := range r.Topics {
			topic(tp.Topic)
		}
	case *kmsg.OffsetFetchResponse:
		for _, tp := range r.Topics {
			topic(tp.Topic)
		}
		for _, g := range r.Groups {
			group(g.Group)
			for _, tp := range g.Topics {
				topic(tp.Topic)
			}
		}
	}
}

// A group request reserves a bounded share of the budgets, whatever it names.
func TestGroupReserveBounded(t *testing.T) {
	s := groupSession(t, true)
	many := make([]string, 2000)
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups = 5, many
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKeys = 4, many
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version, of.Group = 7, "g"
	for range 2000 {
		of.Topics = append(of.Topics, kmsg.OffsetFetchRequestTopic{Topic: "orders", Partitions: []int32{0}})
	}
	for _, r := range []kmsg.Request{dg, fc, of} {
		out, _, _, p := groupReq(t, s, r)
		if out != Forward || p.Reserve <= 0 || p.Reserve > maxGroupReserve {
			t.Fatalf("%s: outcome %d, reserve %d", Name(r.Key()), out, p.Reserve)
		}
	}
}
