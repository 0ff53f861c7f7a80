// What the gateway refuses in the group family, and how much it takes: every
// group API refused without a receive operation (D6), a group id too long
// once prefixed, refusals and budget reservations bounded. The session and
// helpers are groups_test.go's.

package decide

import (
	"strings"
	"testing"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// D6: without a receive operation every group API is refused by the
// gateway with GROUP_AUTHORIZATION_FAILED, and nothing is forwarded.
func TestGroupsNeedReceive(t *testing.T) {
	s := groupSession(t, false)
	groupMembershipRefused(t, s)
	groupOffsetsRefused(t, s)
	// JoinGroup: TestJoinGroupConsumerProtocol.
}

// groupRefused: req is answered by the gateway, every code code reads in
// the answer GROUP_AUTHORIZATION_FAILED, and there is one at least.
func groupRefused(t *testing.T, s *Session, req kmsg.Request, code func(kmsg.Response) []int16) {
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

// groupMembershipRefused: Heartbeat, LeaveGroup, SyncGroup, DescribeGroups
// and ListGroups, each at a few versions.
func groupMembershipRefused(t *testing.T, s *Session) {
	for _, v := range []int16{0, 4} {
		r := kmsg.NewPtrHeartbeatRequest()
		r.Version, r.Group = v, "billing"
		groupRefused(t, s, r, func(a kmsg.Response) []int16 { return []int16{a.(*kmsg.HeartbeatResponse).ErrorCode} })
	}
	for _, v := range []int16{0, 3, 5} {
		r := kmsg.NewPtrLeaveGroupRequest()
		r.Version, r.Group, r.MemberID = v, "billing", "m1"
		r.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m1"}}
		groupRefused(t, s, r, func(a kmsg.Response) []int16 { return []int16{a.(*kmsg.LeaveGroupResponse).ErrorCode} })
	}
	for _, v := range []int16{0, 5} {
		r := kmsg.NewPtrSyncGroupRequest()
		r.Version, r.Group = v, "billing"
		groupRefused(t, s, r, func(a kmsg.Response) []int16 { return []int16{a.(*kmsg.SyncGroupResponse).ErrorCode} })
	}
	for _, v := range []int16{0, 6} {
		r := kmsg.NewPtrDescribeGroupsRequest()
		r.Version, r.Groups = v, []string{"billing", "other"}
		groupRefused(t, s, r, func(a kmsg.Response) []int16 {
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
		groupRefused(t, s, r, func(a kmsg.Response) []int16 { return []int16{a.(*kmsg.ListGroupsResponse).ErrorCode} })
	}
}

// groupOffsetsRefused: OffsetCommit, OffsetFetch by topic and by group,
// and FindCoordinator by key and by keys.
func groupOffsetsRefused(t *testing.T, s *Session) {
	for _, v := range []int16{0, 2, 8, 9} {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version, r.Group = v, "billing"
		tp := kmsg.NewOffsetCommitRequestTopic()
		tp.Topic = "orders"
		tp.Partitions = []kmsg.OffsetCommitRequestTopicPartition{kmsg.NewOffsetCommitRequestTopicPartition()}
		r.Topics = append(r.Topics, tp)
		groupRefused(t, s, r, func(a kmsg.Response) []int16 {
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
		groupRefused(t, s, r, func(a kmsg.Response) []int16 {
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
		groupRefused(t, s, r, func(a kmsg.Response) []int16 {
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
		groupRefused(t, s, r, func(a kmsg.Response) []int16 {
			resp := a.(*kmsg.FindCoordinatorResponse)
			if v < 4 {
				return []int16{resp.ErrorCode}
			}
			return []int16{resp.Coordinators[0].ErrorCode}
		})
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
