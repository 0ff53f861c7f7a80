// The group offsets (N1, N2): OffsetCommit and OffsetFetch mapped both ways,
// single and batched, and their version caps. The session and helpers are
// groups_test.go's.

package decide

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
	for _, v := range []int16{1, 2, 5, 7} {
		offsetFetchSingle(t, v)
	}
	for _, v := range []int16{8, 9} {
		offsetFetchBatched(t, v)
	}
}

// offsetFetchBrokerTopics: the broker's committed offsets of acme.orders,
// globex.orders and acme.audit, partition 0 each.
func offsetFetchBrokerTopics() []kmsg.OffsetFetchResponseTopic {
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

// offsetFetchCodes: each answered topic's first partition's code, by name.
func offsetFetchCodes(ts []kmsg.OffsetFetchResponseTopic) map[string]int16 {
	m := map[string]int16{}
	for _, tp := range ts {
		m[tp.Topic] = tp.Partitions[0].ErrorCode
	}
	return m
}

// offsetFetchSingle: a single-group OffsetFetch of version v, topics
// asked then (from v2) all of them.
func offsetFetchSingle(t *testing.T, v int16) {
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
	b.Topics = offsetFetchBrokerTopics()[:1]
	a := groupResp(t, s, p, b).(*kmsg.OffsetFetchResponse)
	if got := offsetFetchCodes(a.Topics); len(got) != 2 || got["orders"] != 0 || got["globex.orders"] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("v%d: answered %v", v, got)
	}
	if v < 2 {
		return
	}
	// All the group's topics.
	r.Topics = nil
	out, fw, _, p = groupReq(t, s, r)
	if out != Forward || fw.(*kmsg.OffsetFetchRequest).Topics != nil {
		t.Fatalf("v%d: null topics forwarded as %+v", v, fw)
	}
	b.Topics = offsetFetchBrokerTopics()
	a = groupResp(t, s, p, b).(*kmsg.OffsetFetchResponse)
	if got := offsetFetchCodes(a.Topics); len(got) != 2 || got["orders"] != 0 || got["audit"] != 0 {
		t.Fatalf("v%d: all topics answered %v", v, got)
	}
}

// offsetFetchBatched: a batched OffsetFetch of version v, for a group with
// topics asked, one with all, one whose only topic is refused; then the
// refused group alone, answered by the gateway.
func offsetFetchBatched(t *testing.T, v int16) {
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
	offsetFetchBatchedAnswer(t, s, p, v)
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

// offsetFetchBatchedAnswer: the broker's answer to the batched request,
// the other tenant's group among its groups, is answered with the view's
// topics by short name, and the topics asked that the broker left out
// UNKNOWN_TOPIC_OR_PARTITION.
func offsetFetchBatchedAnswer(t *testing.T, s *Session, p *Pending, v int16) {
	b := kmsg.NewPtrOffsetFetchResponse()
	for _, g := range []string{"acme.~g.refused", "acme.~g.billing", "acme.~g.all", "globex.~g.all"} {
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = g
		if g != "acme.~g.refused" {
			for _, tp := range offsetFetchBrokerTopics() {
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
