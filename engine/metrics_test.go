package engine

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine/signals"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sample is one line of the exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
	line   string
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^{}\n]*\})? (\S+)$`)
	labelPair  = regexp.MustCompile(`^([a-zA-Z_][a-zA-Z0-9_]*)="([^"\\\n]*)"$`)
)

// parseExposition reads the Prometheus text format the engine writes;
// every line must parse.
func parseExposition(t *testing.T, text string) []sample {
	t.Helper()
	var out []sample
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not an exposition line: %q", line)
		}
		s := sample{name: m[1], labels: map[string]string{}, line: line}
		if m[2] != "" {
			for _, kv := range strings.Split(m[2][1:len(m[2])-1], ",") {
				p := labelPair.FindStringSubmatch(kv)
				if p == nil {
					t.Fatalf("label %q of %q", kv, line)
				}
				s.labels[p[1]] = p[2]
			}
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("value of %q: %v", line, err)
		}
		s.value = v
		out = append(out, s)
	}
	return out
}

// seedLabels: each flexway_kafka_* family and the labels the seed gives it
// (and `le` for a histogram's buckets).
var seedLabels = map[string][]string{
	"flexway_kafka_connections":                       {"cluster", "tenant", "mechanism"},
	"flexway_kafka_requests_total":                    {"cluster", "tenant", "api", "decision", "cause"},
	"flexway_kafka_bytes_total":                       {"cluster", "tenant", "direction"},
	"flexway_kafka_throttle_seconds_bucket":           {"cluster", "tenant", "quota", "scope", "le"},
	"flexway_kafka_throttle_seconds_sum":              {"cluster", "tenant", "quota", "scope"},
	"flexway_kafka_throttle_seconds_count":            {"cluster", "tenant", "quota", "scope"},
	"flexway_kafka_connections_refused_total":         {"bound", "tenant"},
	"flexway_kafka_connections_closed_total":          {"cause", "tenant"},
	"flexway_kafka_tenant_budget_total":               {"cluster", "tenant", "outcome"},
	"flexway_kafka_tenant_budget_wait_seconds_bucket": {"cluster", "tenant", "le"},
	"flexway_kafka_tenant_budget_wait_seconds_sum":    {"cluster", "tenant"},
	"flexway_kafka_tenant_budget_wait_seconds_count":  {"cluster", "tenant"},
	"flexway_kafka_upstream_connections_total":        {"cluster", "broker", "outcome"},
	"flexway_kafka_panics_total":                      {},
	// The audit trail's own (issue 10.4: what a full queue drops is counted).
	"flexway_kafka_audit_dropped_total": {},
	"flexway_kafka_audit_records_total": {},
	// Issue 33.3: an anonymous peer's records past 10 a second, left out.
	"flexway_kafka_audit_unauthenticated_dropped_total": {},
}

// closedValues: the values each closed label may take (tenant and cluster
// are checked apart).
var closedValues = map[string][]string{
	"mechanism": {"none", "api_key", "oauthbearer", "mtls"},
	"decision":  {"allowed", "throttled", "refused"},
	"cause":     {"acl", "admin_api", "quota", "unknown_topic", "authentication", "kms_unavailable", "unsupported", "key_destroyed", "none", "auth_timeout", "idle_timeout", "max_session_lifetime"},
	"direction": {"produce", "fetch"},
	"quota":     {"producer_byte_rate", "consumer_byte_rate", "request_rate", "broker"},
	"scope":     {"client", "tenant", "broker"},
	"bound":     {"max_unauthenticated_connections", "max_connections_per_ip", "max_connections_per_tenant", "max_connection_rate_per_tenant"},
	"outcome":   {"waited", "closed", "ok", "failed"},
}

// checkClosed checks that every flexway_kafka_* sample has exactly the
// seed's labels, each of a closed value.
func checkClosed(t *testing.T, samples []sample, clusters map[string]bool) {
	t.Helper()
	for _, s := range samples {
		if !strings.HasPrefix(s.name, "flexway_kafka_") {
			continue
		}
		want, ok := seedLabels[s.name]
		if !ok {
			t.Errorf("%q: a family the seed does not name", s.line)
			continue
		}
		for k := range s.labels {
			if !contains(","+strings.Join(want, ",")+",", ","+k+",") {
				t.Errorf("%q: label %s is not a dimension of %s", s.line, k, s.name)
			}
		}
		for k, v := range s.labels {
			switch k {
			case "cluster":
				if !clusters[v] {
					t.Errorf("%q: cluster %q", s.line, v)
				}
			case "tenant", "le", "api":
			case "broker":
				if v != "bootstrap" {
					if _, err := strconv.Atoi(v); err != nil {
						t.Errorf("%q: broker %q is not a node id", s.line, v)
					}
				}
			default:
				if !contains(","+strings.Join(closedValues[k], ",")+",", ","+v+",") {
					t.Errorf("%q: %s=%q is not one of the seed's", s.line, k, v)
				}
			}
		}
	}
}

// sendAs sends req with the client id cid.
func (r *rawConn) sendAs(req kmsg.Request, cid string) {
	r.corr++
	b := []byte{0, 0, 0, 0}
	b = codec.AppendRequestHeader(b, req.Key(), req.GetVersion(), r.corr, []byte(cid), false, req.IsFlexible())
	b = req.AppendTo(b)
	codec.PutSize(b, len(b)-4)
	r.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.c.Write(b); err != nil {
		r.t.Fatalf("send: %v", err)
	}
}

// addTenants appends n keys (tenants t000…) to the env's key store and
// reloads; it returns their ids and keys.
func addTenants(t *testing.T, env *testEnv, n int) (ids, keys []string) {
	t.Helper()
	path := filepath.Join(env.dir, "api-keys.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var store strings.Builder
	store.Write(b)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("k%03d", i)
		key := hex.EncodeToString([]byte("metrics-key-" + id))
		h := configs.HashKey(key)
		fmt.Fprintf(&store, "  - id: %s\n    hash: \"sha256:%s\"\n    tenant: t%03d\n    operations: [produceOrders, consumeOrders]\n", id, hex.EncodeToString(h[:]), i)
		ids, keys = append(ids, id), append(keys, key)
	}
	must(t, os.WriteFile(path, []byte(store.String()), 0o600))
	snap, err := configs.Load(filepath.Join(env.dir, "flexway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := env.e.Reload(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
	return ids, keys
}

// O1: after 250 tenants, each asking for a topic of a hostile name with a
// hostile client id, /metrics holds the 200 first tenants' series, the 50
// others under _other, every dimension closed, and never a topic, a client
// id, a key, a user, a physical name or an address.
func TestMetricsTenantCapAndHostileNames(t *testing.T) {
	env := newTestEnv(t, "")
	ids, keys := addTenants(t, env, 250)
	askHostileNames(t, env, ids, keys)

	text := closedMetrics(env)
	if n := testkit.SumSeries(text, "flexway_kafka_connections{"); n != 0 {
		t.Errorf("flexway_kafka_connections sums to %v with every connection closed", n)
	}
	samples := parseExposition(t, text)
	checkClosed(t, samples, map[string]bool{"shop": true})
	checkTenantCap(t, samples)
	forbidden := []string{"secret-topic", "evil", "hostile", "127.0.0.1", "localhost", ".orders", strconv.Itoa(env.base), keys[0], keys[249]}
	for _, addr := range env.direct {
		forbidden = append(forbidden, addr)
	}
	for _, f := range forbidden {
		if strings.Contains(text, f) {
			t.Errorf("/metrics names %q", f)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", text)
	}
}

// askHostileNames has each tenant of ids ask, on a connection of its own
// with a hostile client id, for a topic of a hostile name (unknown), then
// has an authentication refused under a hostile user.
func askHostileNames(t *testing.T, env *testEnv, ids, keys []string) {
	const hostileTopic = `secret-topic"},evil{x="1`
	const hostileClient = "evil-client\"}\n# HELP"
	for i := range ids {
		r := dialRaw(t, env.boot, ids[i], keys[i])
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 9
		md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(hostileTopic + strconv.Itoa(i))}}
		r.sendAs(md, hostileClient)
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = 9
		r.recv(resp)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 3 {
			t.Fatalf("tenant %d: metadata answer %+v", i, resp.Topics)
		}
		_ = r.c.Close()
	}
	// An authentication refused under a hostile user.
	bad := dialPlain(t, env.boot)
	bad.saslPlain("hostile\"user", keys[0])
	bad.expectClosed(5 * time.Second)
}

// closedMetrics is the exposition once the connections closed: the gauge
// back to 0 (wait-until: the loops see the closes asynchronously), or as
// it is after 10 s.
func closedMetrics(env *testEnv) string {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var out bytes.Buffer
		env.e.Metrics().WritePrometheus(&out)
		text := out.String()
		if testkit.SumSeries(text, "flexway_kafka_connections{") == 0 || time.Now().After(deadline) {
			return text
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkTenantCap: of the 250 tenants t000..t249, the first signals.MaxTenants
// authenticated under a series of their own, the 50 others under _other;
// the 250 unknown topics and the one refused authentication are counted.
func checkTenantCap(t *testing.T, samples []sample) {
	tenants := sumBy(samples, "flexway_kafka_requests_total", "tenant", func(s sample) bool {
		return s.labels["api"] == "SaslAuthenticate" && s.labels["decision"] == "allowed"
	})
	named := 0
	for tn := range tenants {
		if !strings.HasPrefix(tn, "_") {
			named++
		}
	}
	if named != signals.MaxTenants {
		t.Errorf("%d tenants have their own series, want %d", named, signals.MaxTenants)
	}
	for i := 0; i < 250; i++ {
		_, own := tenants[fmt.Sprintf("t%03d", i)]
		if own != (i < signals.MaxTenants) {
			t.Errorf("tenant t%03d: own series %v", i, own)
		}
	}
	if tenants[signals.LabelOther] != 50 {
		t.Errorf("_other: %v authentications, want 50", tenants[signals.LabelOther])
	}
	unknown := sampleTotal(samples, "flexway_kafka_requests_total", func(s sample) bool {
		return s.labels["api"] == "Metadata" && s.labels["decision"] == "refused" && s.labels["cause"] == "unknown_topic"
	})
	authRefused := sampleTotal(samples, "flexway_kafka_requests_total", func(s sample) bool {
		return s.labels["cause"] == "authentication" && s.labels["tenant"] == signals.LabelAnonymous
	})
	if unknown != 250 || authRefused != 1 {
		t.Errorf("Metadata refused unknown_topic %v (want 250), authentication refused %v (want 1)", unknown, authRefused)
	}
}

// MetricNames (what a dashboard or a rule may name) is every family the
// seed's table gives, and checkClosed's list of them.
func TestMetricNamesAreTheSeeds(t *testing.T) {
	names := MetricNames()
	if len(names) != len(seedLabels) {
		t.Fatalf("MetricNames %d names, seedLabels %d", len(names), len(seedLabels))
	}
	for _, n := range names {
		if _, ok := seedLabels[n]; !ok {
			t.Errorf("%s: not in the seed's table", n)
		}
	}
}
