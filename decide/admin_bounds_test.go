// What administration never reaches: partitions past max_topic_partitions or
// a replica assignment, broker resources, versions naming topics by id, and
// refusals larger than maxRefused entries. The session and helpers are
// admin_test.go's.

package decide

import (
	"math"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Partitions: at most max_topic_partitions, never a replica assignment.
func TestAdminPartitions(t *testing.T) {
	s := adminSession(t, fuzzAdminScope)
	for _, c := range []struct {
		n      int32
		assign bool
		ok     bool
	}{
		{adminTestMaxPartitions, false, true},
		{adminTestMaxPartitions + 1, false, false},
		{1, false, true},
		{-1, false, true}, // the broker's num.partitions: the operator's own choice
		{math.MaxInt32, false, false},
		{1, true, false},
	} {
		createTopicsBound(t, s, c.n, c.assign, c.ok)
		createPartitionsBound(t, s, c.n, c.assign, c.ok)
	}
	// Limits unset: the listener's defaults (64 partitions, 16MiB).
	s.Limits.MaxTopicPartitions, s.Limits.MaxRequestBytes = 0, 0
	for _, c := range []struct {
		n  int32
		ok bool
	}{{64, true}, {65, false}} {
		out, _, _, _ := groupReq(t, s, createTopicsReq(5, c.n, nil, "orders"))
		if (out == Forward) != c.ok {
			t.Errorf("default bound, %d partitions: outcome %d", c.n, out)
		}
	}
	for _, c := range []struct {
		v  string
		ok bool
	}{{"16777216", true}, {"16777217", false}} {
		out, _, _, _ := groupReq(t, s, alterReq(1, kmsg.ConfigResourceTypeTopic, "orders", setOp("max.message.bytes", sp(c.v))))
		if (out == Forward) != c.ok {
			t.Errorf("default bound, max.message.bytes=%s: outcome %d", c.v, out)
		}
	}
}

// createTopicsBound: a CreateTopics of n partitions (or, with assign, a
// replica assignment) is forwarded as asked when ok, else answered
// POLICY_VIOLATION, at versions 0, 4 and 7.
func createTopicsBound(t *testing.T, s *Session, n int32, assign, ok bool) {
	for _, v := range []int16{0, 4, 7} {
		req := createTopicsReq(v, n, nil, "orders")
		if assign {
			req.Topics[0].NumPartitions, req.Topics[0].ReplicationFactor = -1, -1
			req.Topics[0].ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1}}}
		}
		out, fw, a, _ := groupReq(t, s, req)
		if ok {
			if out != Forward || fw.(*kmsg.CreateTopicsRequest).Topics[0].NumPartitions != n {
				t.Errorf("CreateTopics v%d %d partitions: outcome %d", v, n, out)
			}
			continue
		}
		if out != Answer {
			t.Errorf("CreateTopics v%d %d partitions (assignment %v): forwarded", v, n, assign)
			continue
		}
		wantCode(t, "CreateTopics", a.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode, kerr.PolicyViolation)
	}
}

// createPartitionsBound: a CreatePartitions to n partitions (or, with
// assign, an assignment) is forwarded renamed, without assignment, when ok,
// else answered POLICY_VIOLATION, at versions 0 and 3.
func createPartitionsBound(t *testing.T, s *Session, n int32, assign, ok bool) {
	for _, v := range []int16{0, 3} {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version, req.TimeoutMillis = v, 1000
		tp := kmsg.NewCreatePartitionsRequestTopic()
		tp.Topic, tp.Count = "orders", n
		if assign {
			tp.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{1}}}
		}
		req.Topics = append(req.Topics, tp)
		out, fw, a, _ := groupReq(t, s, req)
		if ok {
			if out != Forward {
				t.Errorf("CreatePartitions v%d %d: outcome %d", v, n, out)
				continue
			}
			if ft := fw.(*kmsg.CreatePartitionsRequest).Topics; ft[0].Topic != "acme.orders" || ft[0].Count != n || ft[0].Assignment != nil {
				t.Errorf("CreatePartitions v%d forwarded %+v", v, ft)
			}
			continue
		}
		if out != Answer {
			t.Errorf("CreatePartitions v%d %d (assignment %v): forwarded", v, n, assign)
			continue
		}
		wantCode(t, "CreatePartitions", a.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode, kerr.PolicyViolation)
	}
}

// Config resources: topics only; never a broker resource.
func TestAdminBrokerResources(t *testing.T) {
	s := adminSession(t, fuzzAdminScope)
	types := []struct {
		typ  kmsg.ConfigResourceType
		name string
		want *kerr.Error
	}{
		{kmsg.ConfigResourceTypeBroker, "1", kerr.ClusterAuthorizationFailed},
		{kmsg.ConfigResourceTypeBroker, "", kerr.ClusterAuthorizationFailed},
		{kmsg.ConfigResourceTypeBrokerLogger, "1", kerr.ClusterAuthorizationFailed},
		{kmsg.ConfigResourceTypeClientMetrics, "m", kerr.ClusterAuthorizationFailed},
		{kmsg.ConfigResourceTypeUnknown, "orders", kerr.ClusterAuthorizationFailed},
		{99, "orders", kerr.ClusterAuthorizationFailed},
		{kmsg.ConfigResourceTypeGroupConfig, "g1", kerr.GroupAuthorizationFailed},
	}
	for _, c := range types {
		dc := kmsg.NewPtrDescribeConfigsRequest()
		dc.Version = 4
		dc.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: c.typ, ResourceName: c.name}}
		out, _, a, _ := groupReq(t, s, dc)
		if out != Answer {
			t.Fatalf("DescribeConfigs %v %q forwarded", c.typ, c.name)
		}
		r := a.(*kmsg.DescribeConfigsResponse).Resources[0]
		if r.ResourceType != c.typ || r.ResourceName != c.name {
			t.Errorf("DescribeConfigs refusal names %v %q", r.ResourceType, r.ResourceName)
		}
		wantCode(t, "DescribeConfigs "+c.typ.String(), r.ErrorCode, c.want)

		out, _, a, _ = groupReq(t, s, alterReq(1, c.typ, c.name, setOp("retention.ms", sp("60000"))))
		if out != Answer {
			t.Fatalf("IncrementalAlterConfigs %v %q forwarded", c.typ, c.name)
		}
		ar := a.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		if ar.ResourceType != c.typ || ar.ResourceName != c.name {
			t.Errorf("IncrementalAlterConfigs refusal names %v %q", ar.ResourceType, ar.ResourceName)
		}
		wantCode(t, "IncrementalAlterConfigs "+c.typ.String(), ar.ErrorCode, c.want)
	}

	// A topic and a broker in one request: the topic crosses, the broker is
	// answered by the gateway, merged.
	req := alterReq(1, kmsg.ConfigResourceTypeTopic, "orders", setOp("retention.ms", sp("604800000")))
	req.Resources = append(req.Resources, kmsg.IncrementalAlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1",
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("log.retention.ms", sp("-1"))}})
	out, fw, _, p := groupReq(t, s, req)
	if out != Forward {
		t.Fatalf("outcome %d", out)
	}
	if rs := fw.(*kmsg.IncrementalAlterConfigsRequest).Resources; len(rs) != 1 || rs[0].ResourceType != kmsg.ConfigResourceTypeTopic || rs[0].ResourceName != "acme.orders" {
		t.Fatalf("forwarded %+v", rs)
	}
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, "acme.orders"}, {kmsg.ConfigResourceTypeTopic, "globex.orders"}, {kmsg.ConfigResourceTypeBroker, "1"}, {kmsg.ConfigResourceTypeGroupConfig, "acme.orders"}} {
		resp.Resources = append(resp.Resources, kmsg.IncrementalAlterConfigsResponseResource{ResourceType: r.typ, ResourceName: r.name, ErrorMessage: sp("broker words")})
	}
	got := groupResp(t, s, p, resp).(*kmsg.IncrementalAlterConfigsResponse)
	if len(got.Resources) != 2 || got.Resources[0].ResourceName != "orders" || got.Resources[0].ErrorCode != 0 ||
		got.Resources[1].ResourceType != kmsg.ConfigResourceTypeBroker || got.Resources[1].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("answer %+v", got.Resources)
	}
}

// Versions: never one naming topics by id (DeleteTopics v6).
func TestAdminVersions(t *testing.T) {
	s := adminSession(t, fuzzAdminScope)
	for _, c := range []struct{ key, max int16 }{{19, 7}, {20, 5}, {21, 2}, {32, 4}, {37, 3}, {42, 3}, {44, 1}, {47, 0}} {
		if k, _ := KindOf(c.key); k != Served {
			t.Errorf("%s not served", Name(c.key))
		}
		lo, hi, ok := s.Versions.Range(c.key)
		if !ok || lo != 0 || hi != c.max {
			t.Errorf("%s announced v%d-%d (%v), want v0-%d", Name(c.key), lo, hi, ok, c.max)
		}
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	req.Topics = []kmsg.DeleteTopicsRequestTopic{{TopicID: [16]byte{1}}}
	fr := reqFrame(req, 1, "c")
	var p Pending
	h := mustHeader(t, fr)
	if out := s.Request(&h, fr, 2, testGrant, &p); out != Disconnect {
		t.Fatalf("DeleteTopics v6 (by id): outcome %d", out)
	}
}

// What the gateway answers itself is bounded: a request refused for more
// than maxRefused entries disconnects.
func TestAdminRefusalsBounded(t *testing.T) {
	s := adminSession(t)
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.Version = 5
	for range maxRefused + 1 {
		dt.TopicNames = append(dt.TopicNames, "orders")
	}
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Version, dg.Groups = 3, make([]string, maxRefused+1)
	dr := kmsg.NewPtrDeleteRecordsRequest()
	dr.Version = 2
	dr.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "orders", Partitions: make([]kmsg.DeleteRecordsRequestTopicPartition, maxRefused+1)}}
	for _, req := range []kmsg.Request{dt, dg, dr} {
		fr := reqFrame(req, 1, "c")
		h := mustHeader(t, fr)
		var p Pending
		if out := s.Request(&h, fr, 2, testGrant, &p); out != Disconnect || !strings.Contains(p.Cause, "too many") {
			t.Errorf("%s: outcome %d (%s)", Name(req.Key()), out, p.Cause)
		}
	}
}
