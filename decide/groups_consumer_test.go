// The consumer protocol inside the group requests (N1, N2): JoinGroup's
// subscriptions and SyncGroup's assignments mapped both ways, and the
// protocol's bytes themselves. The session and helpers are groups_test.go's.

package decide

import (
	"bytes"
	"slices"
	"testing"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
		joinGroupLeaderAnswer(t, s, p, v)
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

// joinGroupLeaderAnswer: the leader's answer to a consumer JoinGroup of
// version v, every member's subscription mapped back, another tenant's
// topic (only the broker could put it there) left out, an unreadable one
// answered without topics.
func joinGroupLeaderAnswer(t *testing.T, s *Session, p *Pending, v int16) {
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
	m := readSubscription(t, a.Members[0].ProtocolMetadata)
	if !slices.Equal(m.Topics, []string{"orders"}) || len(m.OwnedPartitions) != 1 || m.OwnedPartitions[0].Topic != "audit" {
		t.Fatalf("v%d: subscription answered: %+v", v, m)
	}
	if m := readSubscription(t, a.Members[1].ProtocolMetadata); len(m.Topics) != 0 {
		t.Fatalf("unreadable subscription answered as %+v", m)
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
