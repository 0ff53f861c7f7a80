// The administration family's seeds for FuzzSessionRequest and the
// invariants of their forwarded requests.

package decide

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// adminFuzzSeeds: administration requests naming the seed topics, valid and
// invalid configurations, assignments, broker resources and groups.
func adminFuzzSeeds() [][]byte {
	var out [][]byte
	add := func(r kmsg.Request) { out = append(out, reqFrame(r, 7, "app-1")) }
	adminTopicSeeds(add)
	adminResourceSeeds(add)
	adminAlterSeeds(add)
	return out
}

// adminTopicSeeds: CreateTopics with valid and invalid configurations, too
// many partitions or an assignment; DeleteTopics and DeleteRecords of seed,
// audit and unknown topics.
func adminTopicSeeds(add func(kmsg.Request)) {
	cfgs := []map[string]*string{
		nil,
		{"retention.ms": sp("604800000"), "cleanup.policy": sp("delete,compact")},
		{"retention.ms": sp("-1")},
		{"unclean.leader.election.enable": sp("true")},
		{"min.cleanable.dirty.ratio": sp("0.5"), "max.message.bytes": sp("1048576")},
	}
	for _, v := range []int16{0, 4, 5, 7} {
		for _, c := range cfgs {
			for _, topics := range [][]string{seedTopics, {"orders"}} {
				add(createTopicsReq(v, 3, c, topics...))
			}
		}
		r := createTopicsReq(v, 1000, nil, "orders")
		add(r)
		r = createTopicsReq(v, -1, nil, "orders")
		r.Topics[0].ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 2}}}
		add(r)
	}
	for _, v := range []int16{0, 4, 5} {
		for _, topics := range [][]string{seedTopics, {"orders"}, {"audit", "unknown"}} {
			r := kmsg.NewPtrDeleteTopicsRequest()
			r.Version, r.TopicNames = v, topics
			add(r)
		}
	}
	for _, v := range []int16{0, 2} {
		for _, topics := range [][]string{seedTopics, {"audit"}} {
			r := kmsg.NewPtrDeleteRecordsRequest()
			r.Version = v
			for _, name := range topics {
				r.Topics = append(r.Topics, kmsg.DeleteRecordsRequestTopic{Topic: name, Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 10}}})
			}
			add(r)
		}
	}
}

// adminResourceSeeds: DescribeConfigs of topics and broker resources,
// CreatePartitions with and without an assignment, DeleteGroups of the
// tenant's, the other tenant's and the empty group.
func adminResourceSeeds(add func(kmsg.Request)) {
	for _, v := range []int16{0, 1, 3, 4} {
		for _, topics := range [][]string{seedTopics, nil} {
			r := kmsg.NewPtrDescribeConfigsRequest()
			r.Version, r.IncludeSynonyms, r.IncludeDocumentation = v, true, true
			for _, name := range topics {
				r.Resources = append(r.Resources, kmsg.DescribeConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: name})
			}
			r.Resources = append(r.Resources, kmsg.DescribeConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"},
				kmsg.DescribeConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeBrokerLogger, ResourceName: "1"})
			add(r)
		}
	}
	for _, v := range []int16{0, 3} {
		for _, assign := range []bool{false, true} {
			r := kmsg.NewPtrCreatePartitionsRequest()
			r.Version = v
			for _, name := range seedTopics {
				tp := kmsg.CreatePartitionsRequestTopic{Topic: name, Count: 4}
				if assign {
					tp.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{1}}}
				}
				r.Topics = append(r.Topics, tp)
			}
			add(r)
		}
	}
	for _, v := range []int16{0, 2, 3} {
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Version, r.Groups = v, []string{"g1", "globex.~g.g2", ""}
		add(r)
	}
}

// adminAlterSeeds: IncrementalAlterConfigs of every op on topics and a
// broker, and an OffsetDelete of the seed topics.
func adminAlterSeeds(add func(kmsg.Request)) {
	for _, v := range []int16{0, 1} {
		for _, ops := range [][]kmsg.IncrementalAlterConfigsRequestResourceConfig{
			{setOp("retention.ms", sp("604800000"))},
			{setOp("retention.ms", sp("-1"))},
			{setOp("unclean.leader.election.enable", sp("true"))},
			{{Name: "cleanup.policy", Op: kmsg.IncrementalAlterConfigOpAppend, Value: sp("compact")}},
			{{Name: "retention.ms", Op: kmsg.IncrementalAlterConfigOpDelete}},
			{{Name: "cleanup.policy", Op: kmsg.IncrementalAlterConfigOpSubtract, Value: sp("delete")}},
		} {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			r.Version = v
			for _, name := range []string{"orders", "audit", "globex.orders"} {
				r.Resources = append(r.Resources, kmsg.IncrementalAlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: name, Configs: ops})
			}
			r.Resources = append(r.Resources, kmsg.IncrementalAlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1", Configs: ops})
			add(r)
		}
	}
	r := kmsg.NewPtrOffsetDeleteRequest()
	r.Group = "g1"
	for _, name := range seedTopics {
		r.Topics = append(r.Topics, kmsg.OffsetDeleteRequestTopic{Topic: name, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}})
	}
	add(r)
}

// checkAdminForwarded holds a forwarded administration request to its
// invariants; false when req is not one.
func checkAdminForwarded(t *testing.T, s *Session, req kmsg.Request) bool {
	t.Helper()
	chk := adminForwarded{t: t, s: s}
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		for _, tp := range r.Topics {
			chk.topic("CreateTopics", tp.Topic)
			if len(tp.ReplicaAssignment) > 0 || tp.NumPartitions > s.maxTopicPartitions() {
				t.Fatalf("CreateTopics: %d partitions, assignment %v forwarded", tp.NumPartitions, tp.ReplicaAssignment)
			}
			for _, c := range tp.Configs {
				chk.canonical("CreateTopics", c.Name, c.Value)
			}
		}
	case *kmsg.DeleteTopicsRequest:
		for _, name := range r.TopicNames {
			chk.topic("DeleteTopics", name)
		}
		if len(r.Topics) > 0 || r.Version > 5 {
			t.Fatal("DeleteTopics by id forwarded")
		}
	case *kmsg.DeleteRecordsRequest:
		for _, tp := range r.Topics {
			chk.topic("DeleteRecords", tp.Topic)
		}
	case *kmsg.CreatePartitionsRequest:
		for _, tp := range r.Topics {
			chk.topic("CreatePartitions", tp.Topic)
			if tp.Assignment != nil || tp.Count > s.maxTopicPartitions() {
				t.Fatalf("CreatePartitions: %d partitions, assignment %v forwarded", tp.Count, tp.Assignment)
			}
		}
	case *kmsg.DescribeConfigsRequest:
		if r.IncludeSynonyms || r.IncludeDocumentation {
			t.Fatal("DescribeConfigs asks for synonyms or documentation")
		}
		for _, res := range r.Resources {
			if res.ResourceType != kmsg.ConfigResourceTypeTopic {
				t.Fatalf("DescribeConfigs: resource type %v forwarded", res.ResourceType)
			}
			chk.topic("DescribeConfigs", res.ResourceName)
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		chk.alterConfigs(r)
	case *kmsg.DeleteGroupsRequest:
		for _, g := range r.Groups {
			chk.group("DeleteGroups", g)
		}
	case *kmsg.OffsetDeleteRequest:
		chk.group("OffsetDelete", r.Group)
		for _, tp := range r.Topics {
			chk.topic("OffsetDelete", tp.Topic)
		}
	default:
		return false
	}
	return true
}

// adminForwarded holds the names and values of a forwarded administration
// request to what the session may administer.
type adminForwarded struct {
	t *testing.T
	s *Session
}

// topic: the one topic forwarded is orders, by its physical name, and only
// when it is administrable.
func (c adminForwarded) topic(api, name string) {
	c.t.Helper()
	phys, _ := c.s.View.Physical("orders")
	if _, code := c.s.View.AdminTopic("orders", 0); code != 0 || name != phys {
		c.t.Fatalf("%s: topic %q forwarded", api, name)
	}
}

// group: a group is forwarded only when groups are administrable, and only
// the tenant's.
func (c adminForwarded) group(api, name string) {
	c.t.Helper()
	if !c.s.View.CanAdminGroups || !strings.HasPrefix(name, "acme.~g.") {
		c.t.Fatalf("%s: group %q forwarded (groups administrable: %v)", api, name, c.s.View.CanAdminGroups)
	}
}

// canonical: a configuration value is forwarded only accepted and in its
// canonical form.
func (c adminForwarded) canonical(api, name string, value *string) {
	c.t.Helper()
	v, ok := c.s.configValue(name, value)
	if !ok || v != *value {
		c.t.Fatalf("%s: configuration %s=%v forwarded", api, name, value)
	}
}

// alterConfigs: an IncrementalAlterConfigs is forwarded for topics only,
// each configuration a known one, DELETE without a value, SET and a list's
// APPEND with a canonical value, no other op.
func (c adminForwarded) alterConfigs(r *kmsg.IncrementalAlterConfigsRequest) {
	c.t.Helper()
	for _, res := range r.Resources {
		if res.ResourceType != kmsg.ConfigResourceTypeTopic {
			c.t.Fatalf("IncrementalAlterConfigs: resource type %v forwarded", res.ResourceType)
		}
		c.topic("IncrementalAlterConfigs", res.ResourceName)
		for _, cfg := range res.Configs {
			b, ok := adminConfigs[cfg.Name]
			switch {
			case !ok:
				c.t.Fatalf("IncrementalAlterConfigs: %q forwarded", cfg.Name)
			case cfg.Op == kmsg.IncrementalAlterConfigOpDelete:
				if cfg.Value != nil {
					c.t.Fatal("IncrementalAlterConfigs: a DELETE forwarded with a value")
				}
			case cfg.Op == kmsg.IncrementalAlterConfigOpSet:
				c.canonical("IncrementalAlterConfigs", cfg.Name, cfg.Value)
			case cfg.Op == kmsg.IncrementalAlterConfigOpAppend && b.kind == boundList:
				c.canonical("IncrementalAlterConfigs", cfg.Name, cfg.Value)
			default:
				c.t.Fatalf("IncrementalAlterConfigs: op %d on %q forwarded", cfg.Op, cfg.Name)
			}
		}
	}
}

// The admin seeds forward every administration API, and are refused too.
func TestAdminSeeds(t *testing.T) {
	forwarded, answered := map[int16]int{}, map[int16]int{}
	for _, fr := range adminFuzzSeeds() {
		s := fuzzSession(t, true)
		h := mustHeader(t, fr)
		var p Pending
		checkRequest(t, s, &h, fr, &p)
		switch out := s.Request(&h, fr, fuzzUpCorr, testGrant, &p); out {
		case Forward:
			forwarded[h.Key]++
		case Answer:
			answered[h.Key]++
		}
	}
	for _, k := range []int16{19, 20, 21, 32, 37, 42, 44, 47} {
		if forwarded[k] == 0 {
			t.Errorf("no seed forwards %s", Name(k))
		}
	}
	for _, k := range []int16{19, 20, 21, 32, 37, 44} {
		if answered[k] == 0 {
			t.Errorf("no seed of %s is answered by the gateway", Name(k))
		}
	}
	// Without the scope, every seed is answered by the gateway.
	for _, fr := range adminFuzzSeeds() {
		s := adminSession(t)
		h := mustHeader(t, fr)
		var p Pending
		if out := s.Request(&h, fr, fuzzUpCorr, testGrant, &p); out != Answer {
			t.Errorf("%s v%d without the admin scope: outcome %d", Name(h.Key), h.Version, out)
		}
	}
}
