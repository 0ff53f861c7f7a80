// Who administers (D8): only a token carrying the admin_scope, only its
// topics and, for a receive operation, the tenant's groups; a
// re-authentication without the scope takes it away. The session and
// helpers are admin_test.go's.

package decide

import (
	"testing"

	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Only a token carrying the admin_scope administers, and only its topic;
// never a topic the contract does not declare.
func TestAdminNeedsScope(t *testing.T) {
	topicTA := kerr.TopicAuthorizationFailed
	for _, c := range []adminScopeCase{
		{"admin token", []string{"orders:read", fuzzAdminScope}, "orders", nil, false},
		{"api key (no scopes)", nil, "orders", topicTA, false},
		{"token without the admin scope", []string{"orders:read"}, "orders", topicTA, false},
		{"token with another admin scope", []string{"payments:admin"}, "orders", topicTA, false},
		{"topic without admin_scope", []string{fuzzAdminScope}, "audit", topicTA, false},
		{"another tenant's topic", []string{fuzzAdminScope}, "payments", topicTA, true},
		{"undeclared topic", []string{fuzzAdminScope}, "unknown", topicTA, true},
		{"physical name", []string{fuzzAdminScope}, "acme.orders", topicTA, true},
		{"other tenant's physical name", []string{fuzzAdminScope}, "globex.orders", topicTA, true},
		{"another cluster's topic", []string{fuzzAdminScope}, "elsewhere", topicTA, true},
	} {
		k := adminScopeCheck{t: t, s: adminSession(t, c.scopes...), c: c}
		k.topicAPIs()
		k.offsetDelete()
	}
}

// adminScopeCase is one session's scopes and the topic it administers.
type adminScopeCase struct {
	what   string
	scopes []string
	topic  string
	want   *kerr.Error // nil: forwarded
	// DeleteTopics and OffsetDelete answer a topic outside the view
	// UNKNOWN_TOPIC_OR_PARTITION (Kafka checks DESCRIBE first)
	hidden bool
}

// adminScopeCheck asks one case's session every administration API on the
// case's topic.
type adminScopeCheck struct {
	t *testing.T
	s *Session
	c adminScopeCase
}

// want: the code the case wants, UNKNOWN_TOPIC_OR_PARTITION where the API
// hides a topic outside the view and the case's topic is one.
func (k adminScopeCheck) want(api string, got int16, hidden bool) {
	k.t.Helper()
	w := k.c.want
	if hidden && k.c.hidden {
		w = kerr.UnknownTopicOrPartition
	}
	wantCode(k.t, k.c.what+": "+api, got, w)
}

// check: req is forwarded when the case wants it, else answered with the
// wanted code, read by code.
func (k adminScopeCheck) check(api string, req kmsg.Request, code func(kmsg.Response) int16, hidden bool) {
	k.t.Helper()
	out, _, a, _ := groupReq(k.t, k.s, req)
	if k.c.want == nil {
		if out != Forward {
			k.t.Errorf("%s: %s refused", k.c.what, api)
		}
		return
	}
	if out != Answer {
		k.t.Errorf("%s: %s forwarded", k.c.what, api)
		return
	}
	k.want(api, code(a), hidden)
}

// topicAPIs: CreateTopics, DeleteTopics, DeleteRecords, CreatePartitions,
// DescribeConfigs and IncrementalAlterConfigs of the case's topic.
func (k adminScopeCheck) topicAPIs() {
	t, topic := k.t, k.c.topic
	k.check("CreateTopics", createTopicsReq(5, 1, nil, topic), func(r kmsg.Response) int16 {
		return r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
	}, false)
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.Version, dt.TopicNames = 5, []string{topic}
	k.check("DeleteTopics", dt, func(r kmsg.Response) int16 { return r.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode }, true)
	dr := kmsg.NewPtrDeleteRecordsRequest()
	dr.Version = 2
	dr.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: topic, Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 1, Offset: 9}}}}
	k.check("DeleteRecords", dr, func(r kmsg.Response) int16 {
		p := r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
		if p.Partition != 1 || p.LowWatermark != -1 {
			t.Errorf("DeleteRecords refused partition %+v", p)
		}
		return p.ErrorCode
	}, false)
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.Version = 3
	cp.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: topic, Count: 2}}
	k.check("CreatePartitions", cp, func(r kmsg.Response) int16 { return r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode }, false)
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Version = 4
	dc.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: topic}}
	k.check("DescribeConfigs", dc, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode }, false)
	k.check("IncrementalAlterConfigs", alterReq(1, kmsg.ConfigResourceTypeTopic, topic, setOp("retention.ms", sp("60000"))), func(r kmsg.Response) int16 {
		return r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
	}, false)
}

// offsetDelete: an OffsetDelete of the case's topic is forwarded when the
// case wants it; refused whole GROUP_AUTHORIZATION_FAILED when groups are
// not administrable; else answered with the topic's code per partition.
func (k adminScopeCheck) offsetDelete() {
	t, c := k.t, k.c
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g1"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: c.topic, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	out, _, a, _ := groupReq(t, k.s, od)
	switch {
	case c.want == nil:
		if out != Forward {
			t.Errorf("%s: OffsetDelete refused", c.what)
		}
	case !k.s.View.CanAdminGroups:
		wantCode(t, c.what+": OffsetDelete", a.(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.GroupAuthorizationFailed)
	default:
		r := a.(*kmsg.OffsetDeleteResponse)
		if r.ErrorCode != 0 || len(r.Topics) != 1 || r.Topics[0].Topic != c.topic {
			t.Fatalf("%s: OffsetDelete answer %+v", c.what, r)
		}
		k.want("OffsetDelete", r.Topics[0].Partitions[0].ErrorCode, true)
	}
}

// Groups: the admin_scope of a receive operation administers the tenant's
// groups; a send operation's does not.
func TestAdminGroups(t *testing.T) {
	for _, c := range []struct {
		what      string
		scopes    []string
		sendAdmin bool // the admin_scope is declared on the send operation instead
		ok        bool
	}{
		{"receive operation's admin scope", []string{fuzzAdminScope}, false, true},
		{"no scope", nil, false, false},
		{"another scope", []string{"orders:read"}, false, false},
		{"send operation's admin scope", []string{fuzzAdminScope}, true, false},
	} {
		s := adminGroupsSession(t, c.what, c.scopes, c.sendAdmin)
		adminDeleteGroups(t, s, c.what, c.ok)
		adminOffsetDeleteGroups(t, s, c.what, c.ok)
	}
}

// adminGroupsSession: a session of the given scopes, the admin_scope
// declared on the receive operation or, with sendAdmin, on the send one
// (whose topic is then administrable, its groups not).
func adminGroupsSession(t *testing.T, what string, scopes []string, sendAdmin bool) *Session {
	snap := fuzzSnapshot()
	if sendAdmin {
		snap.Operations["acme-recv-orders"].AdminScope = ""
		snap.Operations["acme-send-orders"].AdminScope = fuzzAdminScope
	}
	v := NewView(snap, snap.Clusters["shop"], "acme", configs.MechAPIKey, []string{"acme-send-orders", "acme-recv-orders", "acme-recv-audit"})
	v.SetAdminScopes(scopes)
	s := &Session{View: v, Versions: fuzzVersions(), Brokers: stubBrokers{}}
	if sendAdmin {
		// The topic is administrable, the groups are not.
		if _, code := v.AdminTopic("orders", 0); code != 0 {
			t.Errorf("%s: orders not administrable", what)
		}
	}
	return s
}

// adminDeleteGroups: DeleteGroups v0 and v3 is forwarded with the groups
// renamed and answered with only the tenant's, renamed back, when ok; else
// answered GROUP_AUTHORIZATION_FAILED for every group.
func adminDeleteGroups(t *testing.T, s *Session, what string, ok bool) {
	for _, ver := range []int16{0, 3} {
		dg := kmsg.NewPtrDeleteGroupsRequest()
		dg.Version, dg.Groups = ver, []string{"g1", "billing"}
		out, fw, a, p := groupReq(t, s, dg)
		if !ok {
			if out != Answer {
				t.Fatalf("%s: DeleteGroups forwarded", what)
			}
			for _, g := range a.(*kmsg.DeleteGroupsResponse).Groups {
				wantCode(t, what+": DeleteGroups "+g.Group, g.ErrorCode, kerr.GroupAuthorizationFailed)
			}
			continue
		}
		if out != Forward {
			t.Fatalf("%s: DeleteGroups refused", what)
		}
		if gs := fw.(*kmsg.DeleteGroupsRequest).Groups; len(gs) != 2 || gs[0] != "acme.~g.g1" || gs[1] != "acme.~g.billing" {
			t.Fatalf("forwarded %v", gs)
		}
		resp := kmsg.NewPtrDeleteGroupsResponse()
		for _, g := range []string{"acme.~g.g1", "acme.~g.billing", "globex.~g.g1", "acme.g1"} {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode, rg.ErrorMessage = g, kerr.GroupIDNotFound.Code, sp("broker words")
			resp.Groups = append(resp.Groups, rg)
		}
		got := groupResp(t, s, p, resp).(*kmsg.DeleteGroupsResponse)
		if len(got.Groups) != 2 || got.Groups[0].Group != "g1" || got.Groups[1].Group != "billing" || got.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code {
			t.Fatalf("answer %+v", got.Groups)
		}
	}
}

// adminOffsetDeleteGroups: an OffsetDelete of orders, audit and payments is
// forwarded for orders alone when ok, the others answered by the gateway
// and the other tenant's answer dropped; else refused whole
// GROUP_AUTHORIZATION_FAILED, without topics.
func adminOffsetDeleteGroups(t *testing.T, s *Session, what string, ok bool) {
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g1"
	for _, name := range []string{"orders", "audit", "payments"} {
		od.Topics = append(od.Topics, kmsg.OffsetDeleteRequestTopic{Topic: name, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}, {Partition: 1}}})
	}
	out, fw, a, p := groupReq(t, s, od)
	if !ok {
		if out != Answer {
			t.Fatalf("%s: OffsetDelete forwarded", what)
		}
		r := a.(*kmsg.OffsetDeleteResponse)
		wantCode(t, what+": OffsetDelete", r.ErrorCode, kerr.GroupAuthorizationFailed)
		if len(r.Topics) != 0 {
			t.Errorf("OffsetDelete refused with topics %+v", r.Topics)
		}
		return
	}
	if out != Forward {
		t.Fatalf("%s: OffsetDelete refused", what)
	}
	fr := fw.(*kmsg.OffsetDeleteRequest)
	if fr.Group != "acme.~g.g1" || len(fr.Topics) != 1 || fr.Topics[0].Topic != "acme.orders" {
		t.Fatalf("OffsetDelete forwarded %+v", fr)
	}
	resp := kmsg.NewPtrOffsetDeleteResponse()
	for _, name := range []string{"acme.orders", "globex.orders"} {
		resp.Topics = append(resp.Topics, kmsg.OffsetDeleteResponseTopic{Topic: name, Partitions: []kmsg.OffsetDeleteResponseTopicPartition{{Partition: 0}}})
	}
	got := groupResp(t, s, p, resp).(*kmsg.OffsetDeleteResponse)
	codes := map[string][]int16{}
	for _, tp := range got.Topics {
		for _, pp := range tp.Partitions {
			codes[tp.Topic] = append(codes[tp.Topic], pp.ErrorCode)
		}
	}
	ta, un := kerr.TopicAuthorizationFailed.Code, kerr.UnknownTopicOrPartition.Code
	if len(codes) != 3 || len(codes["orders"]) != 1 || codes["orders"][0] != 0 ||
		len(codes["audit"]) != 2 || codes["audit"][0] != ta || len(codes["payments"]) != 2 || codes["payments"][1] != un {
		t.Fatalf("OffsetDelete answer %v", codes)
	}
}

// SetAdminScopes replaces what it set: a re-authentication with a token
// without the scope takes the administration away.
func TestSetAdminScopesReplaces(t *testing.T) {
	s := adminSession(t, fuzzAdminScope)
	if _, code := s.View.AdminTopic("orders", 0); code != 0 || !s.View.CanAdminGroups {
		t.Fatal("not administrable")
	}
	s.View.SetAdminScopes([]string{"orders:read"})
	if _, code := s.View.AdminTopic("orders", 0); code != kerr.TopicAuthorizationFailed.Code || s.View.CanAdminGroups {
		t.Fatal("still administrable")
	}
	s.View.SetAdminScopes([]string{""}) // an empty scope opens nothing
	if _, code := s.View.AdminTopic("audit", 0); code != kerr.TopicAuthorizationFailed.Code || s.View.CanAdminGroups {
		t.Fatal("an empty scope administers")
	}
}
