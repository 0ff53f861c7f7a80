// The administration family's session and request builders, and the
// configuration policy: the allow-list and value bounds, one refusal per
// entry, IncrementalAlterConfigs' operations, DescribeConfigs without
// synonyms. Who may administer, the bounds, and the seeds are in
// admin_*_test.go.

package decide

import (
	"strconv"
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
	s := adminSession(t, fuzzAdminScope)
	for _, c := range append(configNumberCases(), configValueCases()...) {
		c.createTopics(t, s)
		c.alterConfigs(t, s)
	}
}

// configBoundCase is one configuration value, and its canonical form
// when it is within the allow-list and its bound.
type configBoundCase struct {
	name  string
	value *string
	canon string // "" : refused with POLICY_VIOLATION
}

// configNumberCases: the bounds of the integer configurations, and how
// their values are read.
func configNumberCases() []configBoundCase {
	const day = int64(86400000)
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	return []configBoundCase{
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
	}
}

// configValueCases: the ratio, max.message.bytes and the lists and choices
// of the allow-list, then configurations it does not hold.
func configValueCases() []configBoundCase {
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	return []configBoundCase{
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
}

// where names the case in a failure: name=value.
func (c configBoundCase) where() string {
	val := "<null>"
	if c.value != nil {
		val = *c.value
	}
	return c.name + "=" + val
}

// createTopics: a CreateTopics with the configuration, at versions 0, 4, 5
// and 7, is forwarded with its canonical value, or answered
// POLICY_VIOLATION for the topic.
func (c configBoundCase) createTopics(t *testing.T, s *Session) {
	where := c.where()
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
}

// alterConfigs: an IncrementalAlterConfigs SET of the configuration, at
// versions 0 and 1, is forwarded with its canonical value, or answered
// POLICY_VIOLATION for the topic resource.
func (c configBoundCase) alterConfigs(t *testing.T, s *Session) {
	where := c.where()
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

func mustHeader(t *testing.T, fr []byte) codec.RequestHeader {
	t.Helper()
	h, err := codec.ParseRequestHeader(fr)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
