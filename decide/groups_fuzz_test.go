// The group family's seeds for FuzzSessionRequest and the invariants of their
// forwarded requests, malformed broker answers, and FuzzGroupResponse with
// the invariants of the rewritten answers.

package decide

import (
	"bytes"
	"strings"
	"testing"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
	c := groupForwarded{t: t, s: s, req: req}
	if !s.View.CanReceive {
		if r, ok := req.(*kmsg.FindCoordinatorRequest); !ok || r.CoordinatorType != 1 {
			t.Fatalf("%s forwarded for a view without receive", Name(req.Key()))
		}
	}
	switch r := req.(type) {
	case *kmsg.FindCoordinatorRequest:
		c.coordinatorKeys(r)
	case *kmsg.JoinGroupRequest:
		c.group(r.Group)
		if r.ProtocolType == consumerProtocol {
			c.subscriptions(r)
		}
	case *kmsg.SyncGroupRequest:
		c.group(r.Group)
		if r.ProtocolType != nil && *r.ProtocolType == consumerProtocol {
			c.assignments(r)
		}
	case *kmsg.HeartbeatRequest:
		c.group(r.Group)
	case *kmsg.LeaveGroupRequest:
		c.group(r.Group)
	case *kmsg.DescribeGroupsRequest:
		for _, g := range r.Groups {
			c.group(g)
		}
		if r.IncludeAuthorizedOperations {
			t.Fatal("DescribeGroups asks for authorized operations")
		}
	case *kmsg.ListGroupsRequest:
	case *kmsg.OffsetCommitRequest:
		c.group(r.Group)
		for _, tp := range r.Topics {
			c.topic(tp.Topic)
		}
	case *kmsg.OffsetFetchRequest:
		if r.Version < 8 {
			c.group(r.Group)
			for _, tp := range r.Topics {
				c.topic(tp.Topic)
			}
		}
		for _, g := range r.Groups {
			c.group(g.Group)
			for _, tp := range g.Topics {
				c.topic(tp.Topic)
			}
		}
	default:
		return false
	}
	return true
}

// groupForwarded holds the names of one forwarded group request to the
// session's view.
type groupForwarded struct {
	t   *testing.T
	s   *Session
	req kmsg.Request
}

// group: a group is forwarded under the tenant's group prefix.
func (c groupForwarded) group(g string) {
	if !strings.HasPrefix(g, c.s.View.Cluster.Prefix+c.s.View.Tenant+".~g.") {
		c.t.Fatalf("%s: group %q forwarded", Name(c.req.Key()), g)
	}
}

// topic: a topic is forwarded only as one of the view's.
func (c groupForwarded) topic(name string) {
	if _, ok := c.s.View.Short(name); !ok {
		c.t.Fatalf("%s: topic %q forwarded", Name(c.req.Key()), name)
	}
}

// coordinatorKeys: a group key is the tenant's group, a transaction key the
// tenant's transactional id (and only with transactions), no other type.
func (c groupForwarded) coordinatorKeys(r *kmsg.FindCoordinatorRequest) {
	keys := r.CoordinatorKeys
	if r.Version < 4 {
		keys = []string{r.CoordinatorKey}
	}
	for _, k := range keys {
		switch r.CoordinatorType {
		case 0:
			c.group(k)
		case 1:
			if !c.s.View.Transactions || !strings.HasPrefix(k, c.s.View.Cluster.Prefix+c.s.View.Tenant+".~t.") {
				c.t.Fatalf("transaction key %q forwarded", k)
			}
		default:
			c.t.Fatalf("coordinator type %d forwarded", r.CoordinatorType)
		}
	}
}

// subscriptions: each consumer subscription of a JoinGroup is forwarded
// readable, its topics and owned partitions the view's.
func (c groupForwarded) subscriptions(r *kmsg.JoinGroupRequest) {
	for _, p := range r.Protocols {
		var m kmsg.ConsumerMemberMetadata
		if err := m.ReadFrom(p.Metadata); err != nil {
			c.t.Fatalf("JoinGroup: subscription forwarded unreadable: %v", err)
		}
		for _, tp := range m.Topics {
			c.topic(tp)
		}
		for _, o := range m.OwnedPartitions {
			c.topic(o.Topic)
		}
	}
}

// assignments: each consumer assignment of a SyncGroup is forwarded
// readable, its topics the view's.
func (c groupForwarded) assignments(r *kmsg.SyncGroupRequest) {
	for _, a := range r.GroupAssignment {
		if len(a.MemberAssignment) == 0 {
			continue
		}
		var as kmsg.ConsumerMemberAssignment
		if err := as.ReadFrom(a.MemberAssignment); err != nil {
			c.t.Fatalf("SyncGroup: assignment forwarded unreadable: %v", err)
		}
		for _, tp := range as.Topics {
			c.topic(tp.Topic)
		}
	}
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

	f.Fuzz(checkGroupResponse)
}

// checkGroupResponse is FuzzGroupResponse's body: a broker answer to
// group key 8+key%9 at the version given, when the rewrite takes it, is
// answered under the client's correlation id, decodes, stays within its
// bound and holds to checkGroupAnswer.
func checkGroupResponse(t *testing.T, key, version byte, consumer bool, body []byte) {
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
}

// checkGroupAnswer holds a group answer to its invariants: topics are the
// view's short names ("orders", "audit"), groups were the tenant's in the
// broker's answer (brokerBody), no ClientHost, no broker words, no
// coordinator but the advertised one. consumer: the JoinGroup asked with
// the consumer protocol.
func checkGroupAnswer(t *testing.T, resp kmsg.Response, brokerBody []byte, consumer bool) {
	t.Helper()
	c := groupAnswer{t: t, resp: resp, brokerBody: brokerBody}
	switch r := resp.(type) {
	case *kmsg.FindCoordinatorResponse:
		c.coordinators(r)
	case *kmsg.JoinGroupResponse:
		if r.ProtocolType != nil {
			consumer = *r.ProtocolType == consumerProtocol
		}
		for _, m := range r.Members {
			if consumer {
				c.subTopics(m.ProtocolMetadata)
			}
		}
	case *kmsg.SyncGroupResponse:
		if r.ProtocolType != nil && *r.ProtocolType == consumerProtocol {
			c.asTopics(r.MemberAssignment)
		}
	case *kmsg.DescribeGroupsResponse:
		c.describedGroups(r)
	case *kmsg.ListGroupsResponse:
		for _, g := range r.Groups {
			c.group(g.Group)
		}
	case *kmsg.OffsetCommitResponse:
		for _, tp := range r.Topics {
			c.topic(tp.Topic)
		}
	case *kmsg.OffsetFetchResponse:
		for _, tp := range r.Topics {
			c.topic(tp.Topic)
		}
		for _, g := range r.Groups {
			c.group(g.Group)
			for _, tp := range g.Topics {
				c.topic(tp.Topic)
			}
		}
	}
}

// groupAnswer holds the names of one group answer to what the client may
// see, brokerBody being the broker's answer it was rewritten from.
type groupAnswer struct {
	t          *testing.T
	resp       kmsg.Response
	brokerBody []byte
}

// topic: a topic is answered by one of the view's short names.
func (c groupAnswer) topic(name string) {
	if name != "orders" && name != "audit" {
		c.t.Fatalf("%T: topic %q answered", c.resp, name)
	}
}

// group: a group is answered only when the broker answered it as the
// tenant's.
func (c groupAnswer) group(name string) {
	if !bytes.Contains(c.brokerBody, []byte("acme.~g."+name)) {
		c.t.Fatalf("%T: group %q answered, not the tenant's", c.resp, name)
	}
}

// coord: a coordinator is the advertised gateway, or none.
func (c groupAnswer) coord(host string, port int32) {
	if (host != "gw.example" || port != 9092) && (host != "" || port != -1) {
		c.t.Fatalf("coordinator %s:%d answered", host, port)
	}
}

// subTopics: a consumer subscription is answered readable, its topics and
// owned partitions the view's.
func (c groupAnswer) subTopics(meta []byte) {
	if len(meta) == 0 {
		return
	}
	var m kmsg.ConsumerMemberMetadata
	if err := m.ReadFrom(meta); err != nil {
		c.t.Fatalf("subscription answered unreadable: %v", err)
	}
	for _, tp := range m.Topics {
		c.topic(tp)
	}
	for _, o := range m.OwnedPartitions {
		c.topic(o.Topic)
	}
}

// asTopics: a consumer assignment is answered readable, its topics the
// view's.
func (c groupAnswer) asTopics(meta []byte) {
	if len(meta) == 0 {
		return
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(meta); err != nil {
		c.t.Fatalf("assignment answered unreadable: %v", err)
	}
	for _, tp := range a.Topics {
		c.topic(tp.Topic)
	}
}

// coordinators: FindCoordinator answers without broker words, with the
// advertised coordinator, and only keys the broker answered as the
// tenant's group or transactional id.
func (c groupAnswer) coordinators(r *kmsg.FindCoordinatorResponse) {
	if r.ErrorMessage != nil {
		c.t.Fatal("broker words answered")
	}
	if r.Version < 4 {
		c.coord(r.Host, r.Port)
	}
	for _, co := range r.Coordinators {
		if co.ErrorMessage != nil {
			c.t.Fatal("broker words answered")
		}
		c.coord(co.Host, co.Port)
		if !bytes.Contains(c.brokerBody, []byte("acme.~g."+co.Key)) && !bytes.Contains(c.brokerBody, []byte("acme.~t."+co.Key)) {
			c.t.Fatalf("coordinator key %q answered, not the tenant's", co.Key)
		}
	}
}

// describedGroups: DescribeGroups answers the tenant's groups without
// broker words or ClientHost, consumer members' subscriptions and
// assignments held to the view.
func (c groupAnswer) describedGroups(r *kmsg.DescribeGroupsResponse) {
	for _, g := range r.Groups {
		c.group(g.Group)
		if g.ErrorMessage != nil {
			c.t.Fatal("broker words answered")
		}
		for _, m := range g.Members {
			if m.ClientHost != "" {
				c.t.Fatalf("ClientHost %q answered", m.ClientHost)
			}
			if g.ProtocolType == consumerProtocol {
				c.subTopics(m.ProtocolMetadata)
				c.asTopics(m.MemberAssignment)
			}
		}
	}
}
