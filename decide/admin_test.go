package decide

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The administration family (D8, seed 002 "Bounded administration")
// checked on bytes: acme's session on the virtual cluster "shop" of
// fuzzSnapshot, whose receive operation of orders declares the admin_scope
// fuzzAdminScope (audit's declares none), answers from a broker that also
// holds globex's names.

const fuzzAdminScope = "orders:admin"

// adminTestMaxPartitions and adminTestMaxRequest are the listener bounds of adminSession.
const (
	adminTestMaxPartitions = 8
	adminTestMaxRequest    = 1 << 20
)

// adminSession is acme's session (send and receive orders, receive audit)
// with a token carrying scopes (none: an API key or a certificate).
func adminSession(t *testing.T, scopes ...string) *Session {
	t.Helper()
	snap := fuzzSnapshot()
	v := NewView(snap, snap.Clusters["shop"], "acme", configs.MechAPIKey, []string{"acme-send-orders", "acme-recv-orders", "acme-recv-audit"})
	if v == nil {
		t.Fatal("no view")
	}
	v.SetAdminScopes(scopes)
	return &Session{View: v, Versions: fuzzVersions(), Brokers: stubBrokers{},
		Limits: Limits{MaxFetchWaitMs: 30000, MaxTopicPartitions: adminTestMaxPartitions, MaxRequestBytes: adminTestMaxRequest}}
}

func createTopicsReq(v int16, partitions int32, configs map[string]*string, topics ...string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = v, 1000
	for _, name := range topics {
		tp := kmsg.NewCreateTopicsRequestTopic()
		tp.Topic, tp.NumPartitions, tp.ReplicationFactor = name, partitions, -1
		for k, val := range configs {
			tp.Configs = append(tp.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: val})
		}
		req.Topics = append(req.Topics, tp)
	}
	return req
}

func alterReq(v int16, typ kmsg.ConfigResourceType, name string, cfgs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version = v
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.Configs = typ, name, cfgs
	req.Resources = append(req.Resources, rr)
	return req
}

func setOp(name string, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: kmsg.IncrementalAlterConfigOpSet, Value: value}
}

func sp(s string) *string { return kmsg.StringPtr(s) }

// The allow-list and the value bounds of the seed's table, each bound at
// the bound and one past it, through CreateTopics and IncrementalAlterConfigs.
func TestAdminConfigBounds(t *testing.T) {
	const day = int64(86400000)
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	cases := []struct {
		name  string
		value *string
		canon string // "" : refused with POLICY_VIOLATION
	}{
		{"retention.ms", sp("60000"), "60000"},
		{"retention.ms", sp("59999"), ""},
		{"retention.ms", sp("31536000000"), "31536000000"},
		{"retention.ms", sp("31536000001"), ""},
		{"retention.ms", sp("-1"), ""},
		{"retention.ms", sp("604800000"), "604800000"},
		{"retention.ms", sp(" 604800000 "), "604800000"},
		{"retention.ms", sp("+604800000"), "604800000"},
		{"retention.ms", sp("6048e5"), ""},
		{"retention.ms", sp("0x10000"), ""},
		{"retention.ms", sp("1_000_000"), ""},
		{"retention.ms", sp(""), ""},
		{"retention.ms", sp("99999999999999999999"), ""},
		{"retention.ms", nil, ""},
		{"retention.bytes", sp(i(1 << 20)), i(1 << 20)},
		{"retention.bytes", sp(i(1<<20 - 1)), ""},
		{"retention.bytes", sp(i(1 << 40)), i(1 << 40)},
		{"retention.bytes", sp(i(1<<40 + 1)), ""},
		{"retention.bytes", sp("-1"), ""},
		{"segment.ms", sp("600000"), "600000"},
		{"segment.ms", sp("599999"), ""},
		{"segment.ms", sp(i(30 * day)), i(30 * day)},
		{"segment.ms", sp(i(30*day + 1)), ""},
		{"segment.bytes", sp(i(1 << 20)), i(1 << 20)},
		{"segment.bytes", sp(i(1<<20 - 1)), ""},
		{"segment.bytes", sp(i(1 << 30)), i(1 << 30)},
		{"segment.bytes", sp(i(1<<30 + 1)), ""},
		{"max.compaction.lag.ms", sp("3600000"), "3600000"},
		{"max.compaction.lag.ms", sp("3599999"), ""},
		{"max.compaction.lag.ms", sp(i(365 * day)), i(365 * day)},
		{"max.compaction.lag.ms", sp(i(365*day + 1)), ""},
		{"min.compaction.lag.ms", sp("0"), "0"},
		{"min.compaction.lag.ms", sp("-1"), ""},
		{"min.compaction.lag.ms", sp(i(30 * day)), i(30 * day)},
		{"min.compaction.lag.ms", sp(i(30*day + 1)), ""},
		{"delete.retention.ms", sp("0"), "0"},
		{"delete.retention.ms", sp("-1"), ""},
		{"delete.retention.ms", sp(i(30 * day)), i(30 * day)},
		{"delete.retention.ms", sp(i(30*day + 1)), ""},
		{"min.cleanable.dirty.ratio", sp("0.1"), "0.1"},
		{"min.cleanable.dirty.ratio", sp("0.09"), ""},
		{"min.cleanable.dirty.ratio", sp("0.0999999"), ""},
		{"min.cleanable.dirty.ratio", sp("1"), "1"},
		{"min.cleanable.dirty.ratio", sp("1.0"), "1"},
		{"min.cleanable.dirty.ratio", sp("1.01"), ""},
		{"min.cleanable.dirty.ratio", sp(".5"), "0.5"},
		{"min.cleanable.dirty.ratio", sp("0.50"), "0.5"},
		{"min.cleanable.dirty.ratio", sp("NaN"), ""},
		{"min.cleanable.dirty.ratio", sp("Infinity"), ""},
		{"min.cleanable.dirty.ratio", sp("1e-1"), ""},
		{"min.cleanable.dirty.ratio", sp("0.5d"), ""},
		{"min.cleanable.dirty.ratio", sp("-0.5"), ""},
		{"min.cleanable.dirty.ratio", sp("."), ""},
		{"max.message.bytes", sp("1024"), "1024"},
		{"max.message.bytes", sp("1023"), ""},
		{"max.message.bytes", sp(i(adminTestMaxRequest)), i(adminTestMaxRequest)},
		{"max.message.bytes", sp(i(adminTestMaxRequest + 1)), ""},
		{"cleanup.policy", sp("delete"), "delete"},
		{"cleanup.policy", sp("compact"), "compact"},
		{"cleanup.policy", sp("compact,delete"), "compact,delete"},
		{"cleanup.policy", sp("delete,compact"), "compact,delete"},
		{"cleanup.policy", sp("compact, delete"), "compact,delete"},
		{"cleanup.policy", sp("delete,delete"), "delete"},
		{"cleanup.policy", sp(""), ""},
		{"cleanup.policy", sp("delete,"), ""},
		{"cleanup.policy", sp("Delete"), ""},
		{"cleanup.policy", sp("delete,tiered"), ""},
		{"compression.type", sp("producer"), "producer"},
		{"compression.type", sp("uncompressed"), "uncompressed"},
		{"compression.type", sp("gzip"), "gzip"},
		{"compression.type", sp("snappy"), "snappy"},
		{"compression.type", sp("lz4"), "lz4"},
		{"compression.type", sp("zstd"), "zstd"},
		{"compression.type", sp("brotli"), ""},
		{"compression.type", sp("GZIP"), ""},
		{"message.timestamp.type", sp("CreateTime"), "CreateTime"},
		{"message.timestamp.type", sp("LogAppendTime"), "LogAppendTime"},
		{"message.timestamp.type", sp("createtime"), ""},
		// Not allow-listed: whatever the value.
		{"unclean.leader.election.enable", sp("true"), ""},
		{"unclean.leader.election.enable", sp("false"), ""},
		{"min.insync.replicas", sp("1"), ""},
		{"leader.replication.throttled.replicas", sp("*"), ""},
		{"follower.replication.throttled.replicas", sp("*"), ""},
		{"message.downconversion.enable", sp("true"), ""},
		{"preallocate", sp("true"), ""},
		{"remote.storage.enable", sp("true"), ""},
		{"local.retention.ms", sp("60000"), ""},
		{"Retention.ms", sp("60000"), ""},
		{"retention.ms ", sp("60000"), ""},
		{"", sp("60000"), ""},
	}
	s := adminSession(t, fuzzAdminScope)
	for _, c := range cases {
		val := "<null>"
		if c.value != nil {
			val = *c.value
		}
		where := c.name + "=" + val
		for _, v := range []int16{0, 4, 5, 7} {
			out, fw, a, _ := groupReq(t, s, createTopicsReq(v, 3, map[string]*string{c.name: c.value}, "orders"))
			if c.canon == "" {
				if out != Answer {
					t.Errorf("CreateTopics v%d %s: forwarded", v, where)
					continue
				}
				r := a.(*kmsg.CreateTopicsResponse)
				if len(r.Topics) != 1 || r.Topics[0].Topic != "orders" || r.Topics[0].ErrorCode != kerr.PolicyViolation.Code {
					t.Errorf("CreateTopics v%d %s: answer %+v", v, where, r.Topics)
				}
				continue
			}
			if out != Forward {
				t.Errorf("CreateTopics v%d %s: refused", v, where)
				continue
			}
			tp := fw.(*kmsg.CreateTopicsRequest).Topics
			if len(tp) != 1 || tp[0].Topic != "acme.orders" || len(tp[0].Configs) != 1 || tp[0].Configs[0].Value == nil || *tp[0].Configs[0].Value != c.canon {
				t.Errorf("CreateTopics v%d %s: forwarded %+v", v, where, tp)
			}
		}
		for _, v := range []int16{0, 1} {
			out, fw, a, _ := groupReq(t, s, alterReq(v, kmsg.ConfigResourceTypeTopic, "orders", setOp(c.name, c.value)))
			if c.canon == "" {
				if out != Answer {
					t.Errorf("IncrementalAlterConfigs v%d %s: forwarded", v, where)
					continue
				}
				r := a.(*kmsg.IncrementalAlterConfigsResponse)
				if len(r.Resources) != 1 || r.Resources[0].ResourceName != "orders" || r.Resources[0].ResourceType != kmsg.ConfigResourceTypeTopic || r.Resources[0].ErrorCode != kerr.PolicyViolation.Code {
					t.Errorf("IncrementalAlterConfigs v%d %s: answer %+v", v, where, r.Resources)
				}
				continue
			}
			if out != Forward {
				t.Errorf("IncrementalAlterConfigs v%d %s: refused", v, where)
				continue
			}
			rs := fw.(*kmsg.IncrementalAlterConfigsRequest).Resources
			if len(rs) != 1 || rs[0].ResourceName != "acme.orders" || len(rs[0].Configs) != 1 || rs[0].Configs[0].Value == nil || *rs[0].Configs[0].Value != c.canon {
				t.Errorf("IncrementalAlterConfigs v%d %s: forwarded %+v", v, where, rs)
			}
		}
	}
}

// One configuration out of bounds refuses its topic (its resource) whole;
// the others of the request still cross.
func TestAdminPolicyPerEntry(t *testing.T) {
	s := adminSession(t, fuzzAdminScope)
	req := alterReq(1, kmsg.ConfigResourceTypeTopic, "orders", setOp("retention.ms", sp("604800000")), setOp("min.insync.replicas", sp("1")))
	out, _, a, _ := groupReq(t, s, req)
	if out != Answer {
		t.Fatalf("outcome %d", out)
	}
	wantCode(t, "IncrementalAlterConfigs", a.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode, kerr.PolicyViolation)

	// Two topics: orders passes, audit (not administrable) is answered by
	// the gateway, merged after the broker's answer.
	ct := createTopicsReq(5, 2, map[string]*string{"retention.ms": sp("604800000")}, "orders", "audit", "payments")
	out, fw, _, p := groupReq(t, s, ct)
	if out != Forward {
		t.Fatalf("outcome %d", out)
	}
	if tp := fw.(*kmsg.CreateTopicsRequest).Topics; len(tp) != 1 || tp[0].Topic != "acme.orders" {
		t.Fatalf("forwarded %+v", tp)
	}
	resp := kmsg.NewPtrCreateTopicsResponse()
	for _, name := range []string{"acme.orders", "globex.orders", "acme.audit"} {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorMessage = name, sp("broker words")
		resp.Topics = append(resp.Topics, rt)
	}
	got := groupResp(t, s, p, resp).(*kmsg.CreateTopicsResponse)
	codes := map[string]int16{}
	for _, tp := range got.Topics {
		codes[tp.Topic] = tp.ErrorCode
		if tp.ErrorMessage != nil {
			t.Errorf("broker words crossed: %q", *tp.ErrorMessage)
		}
	}
	// acme.audit in the broker's answer (never asked) is mapped like any
	// topic of the view; globex's is left out.
	if len(codes) != 3 || codes["orders"] != 0 || codes["audit"] != kerr.TopicAuthorizationFailed.Code || codes["payments"] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("answer %+v", got.Topics)
	}
}

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
		for _, v := range []int16{0, 4, 7} {
			req := createTopicsReq(v, c.n, nil, "orders")
			if c.assign {
				req.Topics[0].NumPartitions, req.Topics[0].ReplicationFactor = -1, -1
				req.Topics[0].ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1}}}
			}
			out, fw, a, _ := groupReq(t, s, req)
			if c.ok {
				if out != Forward || fw.(*kmsg.CreateTopicsRequest).Topics[0].NumPartitions != c.n {
					t.Errorf("CreateTopics v%d %d partitions: outcome %d", v, c.n, out)
				}
				continue
			}
			if out != Answer {
				t.Errorf("CreateTopics v%d %d partitions (assignment %v): forwarded", v, c.n, c.assign)
				continue
			}
			wantCode(t, "CreateTopics", a.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode, kerr.PolicyViolation)
		}
		for _, v := range []int16{0, 3} {
			req := kmsg.NewPtrCreatePartitionsRequest()
			req.Version, req.TimeoutMillis = v, 1000
			tp := kmsg.NewCreatePartitionsRequestTopic()
			tp.Topic, tp.Count = "orders", c.n
			if c.assign {
				tp.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{1}}}
			}
			req.Topics = append(req.Topics, tp)
			out, fw, a, _ := groupReq(t, s, req)
			if c.ok {
				if out != Forward {
					t.Errorf("CreatePartitions v%d %d: outcome %d", v, c.n, out)
					continue
				}
				if ft := fw.(*kmsg.CreatePartitionsRequest).Topics; ft[0].Topic != "acme.orders" || ft[0].Count != c.n || ft[0].Assignment != nil {
					t.Errorf("CreatePartitions v%d forwarded %+v", v, ft)
				}
				continue
			}
			if out != Answer {
				t.Errorf("CreatePartitions v%d %d (assignment %v): forwarded", v, c.n, c.assign)
				continue
			}
			wantCode(t, "CreatePartitions", a.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode, kerr.PolicyViolation)
		}
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

// IncrementalAlterConfigs: a DELETE back to the default always passes for
// an allow-listed key; APPEND only to cleanup.policy; SUBTRACT never.
func TestAdminAlterOps(t *testing.T) {
	s := adminSession(t, fuzzAdminScope)
	op := func(name string, o kmsg.IncrementalAlterConfigOp, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: o, Value: value}
	}
	for _, c := range []struct {
		cfg   kmsg.IncrementalAlterConfigsRequestResourceConfig
		ok    bool
		value *string
	}{
		{op("retention.ms", kmsg.IncrementalAlterConfigOpDelete, nil), true, nil},
		{op("retention.ms", kmsg.IncrementalAlterConfigOpDelete, sp("-1")), true, nil},
		{op("max.message.bytes", kmsg.IncrementalAlterConfigOpDelete, nil), true, nil},
		{op("cleanup.policy", kmsg.IncrementalAlterConfigOpDelete, nil), true, nil},
		{op("unclean.leader.election.enable", kmsg.IncrementalAlterConfigOpDelete, nil), false, nil},
		{op("min.insync.replicas", kmsg.IncrementalAlterConfigOpDelete, nil), false, nil},
		{op("cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, sp("compact")), true, sp("compact")},
		{op("cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, sp("delete,compact")), true, sp("compact,delete")},
		{op("cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, sp("tiered")), false, nil},
		{op("cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, nil), false, nil},
		{op("retention.ms", kmsg.IncrementalAlterConfigOpAppend, sp("60000")), false, nil},
		{op("cleanup.policy", kmsg.IncrementalAlterConfigOpSubtract, sp("delete")), false, nil},
		{op("retention.ms", 7, sp("60000")), false, nil},
		{op("retention.ms", -1, sp("60000")), false, nil},
	} {
		where := c.cfg.Name + " op " + strconv.Itoa(int(c.cfg.Op))
		out, fw, a, _ := groupReq(t, s, alterReq(1, kmsg.ConfigResourceTypeTopic, "orders", c.cfg))
		if !c.ok {
			if out != Answer {
				t.Errorf("%s: forwarded", where)
				continue
			}
			wantCode(t, where, a.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode, kerr.PolicyViolation)
			continue
		}
		if out != Forward {
			t.Errorf("%s: refused", where)
			continue
		}
		got := fw.(*kmsg.IncrementalAlterConfigsRequest).Resources[0].Configs[0]
		if (got.Value == nil) != (c.value == nil) || got.Value != nil && *got.Value != *c.value || got.Op != c.cfg.Op {
			t.Errorf("%s: forwarded %+v", where, got)
		}
	}
}

// Only a token carrying the admin_scope administers, and only its topic;
// never a topic the contract does not declare.
func TestAdminNeedsScope(t *testing.T) {
	topicTA, unknown := kerr.TopicAuthorizationFailed, kerr.UnknownTopicOrPartition
	for _, c := range []struct {
		what   string
		scopes []string
		topic  string
		want   *kerr.Error // nil: forwarded
		// DeleteTopics and OffsetDelete answer a topic outside the view
		// UNKNOWN_TOPIC_OR_PARTITION (Kafka checks DESCRIBE first)
		hidden bool
	}{
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
		s := adminSession(t, c.scopes...)
		want := func(api string, got int16, hidden bool) {
			t.Helper()
			w := c.want
			if hidden && c.hidden {
				w = unknown
			}
			wantCode(t, c.what+": "+api, got, w)
		}
		check := func(api string, req kmsg.Request, code func(kmsg.Response) int16, hidden bool) {
			t.Helper()
			out, _, a, _ := groupReq(t, s, req)
			if c.want == nil {
				if out != Forward {
					t.Errorf("%s: %s refused", c.what, api)
				}
				return
			}
			if out != Answer {
				t.Errorf("%s: %s forwarded", c.what, api)
				return
			}
			want(api, code(a), hidden)
		}
		check("CreateTopics", createTopicsReq(5, 1, nil, c.topic), func(r kmsg.Response) int16 {
			return r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
		}, false)
		dt := kmsg.NewPtrDeleteTopicsRequest()
		dt.Version, dt.TopicNames = 5, []string{c.topic}
		check("DeleteTopics", dt, func(r kmsg.Response) int16 { return r.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode }, true)
		dr := kmsg.NewPtrDeleteRecordsRequest()
		dr.Version = 2
		dr.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: c.topic, Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 1, Offset: 9}}}}
		check("DeleteRecords", dr, func(r kmsg.Response) int16 {
			p := r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
			if p.Partition != 1 || p.LowWatermark != -1 {
				t.Errorf("DeleteRecords refused partition %+v", p)
			}
			return p.ErrorCode
		}, false)
		cp := kmsg.NewPtrCreatePartitionsRequest()
		cp.Version = 3
		cp.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: c.topic, Count: 2}}
		check("CreatePartitions", cp, func(r kmsg.Response) int16 { return r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode }, false)
		dc := kmsg.NewPtrDescribeConfigsRequest()
		dc.Version = 4
		dc.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: c.topic}}
		check("DescribeConfigs", dc, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode }, false)
		check("IncrementalAlterConfigs", alterReq(1, kmsg.ConfigResourceTypeTopic, c.topic, setOp("retention.ms", sp("60000"))), func(r kmsg.Response) int16 {
			return r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
		}, false)
		od := kmsg.NewPtrOffsetDeleteRequest()
		od.Group = "g1"
		od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: c.topic, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
		out, _, a, _ := groupReq(t, s, od)
		switch {
		case c.want == nil:
			if out != Forward {
				t.Errorf("%s: OffsetDelete refused", c.what)
			}
		case !s.View.CanAdminGroups:
			wantCode(t, c.what+": OffsetDelete", a.(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.GroupAuthorizationFailed)
		default:
			r := a.(*kmsg.OffsetDeleteResponse)
			if r.ErrorCode != 0 || len(r.Topics) != 1 || r.Topics[0].Topic != c.topic {
				t.Fatalf("%s: OffsetDelete answer %+v", c.what, r)
			}
			want("OffsetDelete", r.Topics[0].Partitions[0].ErrorCode, true)
		}
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
		snap := fuzzSnapshot()
		if c.sendAdmin {
			snap.Operations["acme-recv-orders"].AdminScope = ""
			snap.Operations["acme-send-orders"].AdminScope = fuzzAdminScope
		}
		v := NewView(snap, snap.Clusters["shop"], "acme", configs.MechAPIKey, []string{"acme-send-orders", "acme-recv-orders", "acme-recv-audit"})
		v.SetAdminScopes(c.scopes)
		s := &Session{View: v, Versions: fuzzVersions(), Brokers: stubBrokers{}}
		if c.sendAdmin {
			// The topic is administrable, the groups are not.
			if _, code := v.AdminTopic("orders", 0); code != 0 {
				t.Errorf("%s: orders not administrable", c.what)
			}
		}
		for _, ver := range []int16{0, 3} {
			dg := kmsg.NewPtrDeleteGroupsRequest()
			dg.Version, dg.Groups = ver, []string{"g1", "billing"}
			out, fw, a, p := groupReq(t, s, dg)
			if !c.ok {
				if out != Answer {
					t.Fatalf("%s: DeleteGroups forwarded", c.what)
				}
				for _, g := range a.(*kmsg.DeleteGroupsResponse).Groups {
					wantCode(t, c.what+": DeleteGroups "+g.Group, g.ErrorCode, kerr.GroupAuthorizationFailed)
				}
				continue
			}
			if out != Forward {
				t.Fatalf("%s: DeleteGroups refused", c.what)
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
		od := kmsg.NewPtrOffsetDeleteRequest()
		od.Group = "g1"
		for _, name := range []string{"orders", "audit", "payments"} {
			od.Topics = append(od.Topics, kmsg.OffsetDeleteRequestTopic{Topic: name, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}, {Partition: 1}}})
		}
		out, fw, a, p := groupReq(t, s, od)
		if !c.ok {
			if out != Answer {
				t.Fatalf("%s: OffsetDelete forwarded", c.what)
			}
			r := a.(*kmsg.OffsetDeleteResponse)
			wantCode(t, c.what+": OffsetDelete", r.ErrorCode, kerr.GroupAuthorizationFailed)
			if len(r.Topics) != 0 {
				t.Errorf("OffsetDelete refused with topics %+v", r.Topics)
			}
			continue
		}
		if out != Forward {
			t.Fatalf("%s: OffsetDelete refused", c.what)
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

// DescribeConfigs never asks for, nor shows, synonyms or documentation.
func TestDescribeConfigsNoSynonyms(t *testing.T) {
	s := adminSession(t, fuzzAdminScope)
	for _, v := range []int16{0, 1, 3, 4} {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version, req.IncludeSynonyms, req.IncludeDocumentation = v, true, true
		req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "orders", ConfigNames: []string{"retention.ms"}}}
		out, fw, _, p := groupReq(t, s, req)
		if out != Forward {
			t.Fatalf("v%d: outcome %d", v, out)
		}
		fr := fw.(*kmsg.DescribeConfigsRequest)
		if fr.IncludeSynonyms || fr.IncludeDocumentation || fr.Resources[0].ResourceName != "acme.orders" || len(fr.Resources[0].ConfigNames) != 1 {
			t.Fatalf("v%d: forwarded %+v", v, fr)
		}
		resp := kmsg.NewPtrDescribeConfigsResponse()
		for _, name := range []string{"acme.orders", "globex.orders"} {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, name
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Value, c.Source = "retention.ms", sp("604800000"), kmsg.ConfigSourceDynamicTopicConfig
			c.Documentation = sp("broker words: the documentation")
			c.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{
				{Name: "retention.ms", Value: sp("604800000"), Source: kmsg.ConfigSourceDynamicTopicConfig},
				{Name: "log.retention.hours", Value: sp("broker words 168"), Source: kmsg.ConfigSourceStaticBrokerConfig},
			}
			rr.Configs = append(rr.Configs, c)
			resp.Resources = append(resp.Resources, rr)
		}
		got := groupResp(t, s, p, resp).(*kmsg.DescribeConfigsResponse)
		if len(got.Resources) != 1 || got.Resources[0].ResourceName != "orders" || len(got.Resources[0].Configs) != 1 {
			t.Fatalf("v%d: answer %+v", v, got.Resources)
		}
		c := got.Resources[0].Configs[0]
		if c.Name != "retention.ms" || c.Value == nil || *c.Value != "604800000" || len(c.ConfigSynonyms) != 0 || c.Documentation != nil {
			t.Fatalf("v%d: config %+v", v, c)
		}
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

// adminFuzzSeeds: administration requests naming the seed topics, valid and
// invalid configurations, assignments, broker resources and groups.
func adminFuzzSeeds() [][]byte {
	var out [][]byte
	add := func(r kmsg.Request) { out = append(out, reqFrame(r, 7, "app-1")) }
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
	return out
}

// checkAdminForwarded holds a forwarded administration request to its
// invariants; false when req is not one.
func checkAdminForwarded(t *testing.T, s *Session, req kmsg.Request) bool {
	t.Helper()
	topic := func(api, name string) {
		t.Helper()
		phys, _ := s.View.Physical("orders")
		if _, code := s.View.AdminTopic("orders", 0); code != 0 || name != phys {
			t.Fatalf("%s: topic %q forwarded", api, name)
		}
	}
	group := func(api, name string) {
		t.Helper()
		if !s.View.CanAdminGroups || !strings.HasPrefix(name, "acme.~g.") {
			t.Fatalf("%s: group %q forwarded (groups administrable: %v)", api, name, s.View.CanAdminGroups)
		}
	}
	canonical := func(api, name string, value *string) {
		t.Helper()
		v, ok := s.configValue(name, value)
		if !ok || v != *value {
			t.Fatalf("%s: configuration %s=%v forwarded", api, name, value)
		}
	}
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		for _, tp := range r.Topics {
			topic("CreateTopics", tp.Topic)
			if len(tp.ReplicaAssignment) > 0 || tp.NumPartitions > s.maxTopicPartitions() {
				t.Fatalf("CreateTopics: %d partitions, assignment %v forwarded", tp.NumPartitions, tp.ReplicaAssignment)
			}
			for _, c := range tp.Configs {
				canonical("CreateTopics", c.Name, c.Value)
			}
		}
	case *kmsg.DeleteTopicsRequest:
		for _, name := range r.TopicNames {
			topic("DeleteTopics", name)
		}
		if len(r.Topics) > 0 || r.Version > 5 {
			t.Fatal("DeleteTopics by id forwarded")
		}
	case *kmsg.DeleteRecordsRequest:
		for _, tp := range r.Topics {
			topic("DeleteRecords", tp.Topic)
		}
	case *kmsg.CreatePartitionsRequest:
		for _, tp := range r.Topics {
			topic("CreatePartitions", tp.Topic)
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
			topic("DescribeConfigs", res.ResourceName)
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		for _, res := range r.Resources {
			if res.ResourceType != kmsg.ConfigResourceTypeTopic {
				t.Fatalf("IncrementalAlterConfigs: resource type %v forwarded", res.ResourceType)
			}
			topic("IncrementalAlterConfigs", res.ResourceName)
			for _, c := range res.Configs {
				b, ok := adminConfigs[c.Name]
				switch {
				case !ok:
					t.Fatalf("IncrementalAlterConfigs: %q forwarded", c.Name)
				case c.Op == kmsg.IncrementalAlterConfigOpDelete:
					if c.Value != nil {
						t.Fatal("IncrementalAlterConfigs: a DELETE forwarded with a value")
					}
				case c.Op == kmsg.IncrementalAlterConfigOpSet:
					canonical("IncrementalAlterConfigs", c.Name, c.Value)
				case c.Op == kmsg.IncrementalAlterConfigOpAppend && b.kind == boundList:
					canonical("IncrementalAlterConfigs", c.Name, c.Value)
				default:
					t.Fatalf("IncrementalAlterConfigs: op %d on %q forwarded", c.Op, c.Name)
				}
			}
		}
	case *kmsg.DeleteGroupsRequest:
		for _, g := range r.Groups {
			group("DeleteGroups", g)
		}
	case *kmsg.OffsetDeleteRequest:
		group("OffsetDelete", r.Group)
		for _, tp := range r.Topics {
			topic("OffsetDelete", tp.Topic)
		}
	default:
		return false
	}
	return true
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

func mustHeader(t *testing.T, fr []byte) codec.RequestHeader {
	t.Helper()
	h, err := codec.ParseRequestHeader(fr)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
