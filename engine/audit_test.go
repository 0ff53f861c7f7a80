package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flexway/flexway/audit"
	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// jsonLines collects the engine's log lines, as the service writes them
// (JSON), for the audit's tests.
type jsonLines struct {
	mu    sync.Mutex
	lines []string
}

func (j *jsonLines) Write(p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		j.lines = append(j.lines, l)
	}
	return len(p), nil
}

func (j *jsonLines) all() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.lines...)
}

// auditLine is what an audit line holds.
type auditLine struct {
	Msg       string `json:"msg"`
	Host      string `json:"host"`
	Method    string `json:"method"`
	Operation string `json:"operation"`
	Decision  string `json:"decision"`
	Code      string `json:"code"`
	Tenant    string `json:"tenant"`
	Principal string `json:"principal"`
	Topic     string `json:"topic"`
}

func (j *jsonLines) audits(t *testing.T) []auditLine {
	var out []auditLine
	for _, l := range j.all() {
		var a auditLine
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("a log line is not JSON: %q", l)
		}
		if a.Msg == audit.Message {
			out = append(out, a)
		}
	}
	return out
}

const auditTestKey = "audit-topic-key-of-the-test-0123"

// withAudit reloads env's gateway with audit: { decisions: mode } and its
// topic key in a file.
func withAudit(t *testing.T, env *testEnv, mode string) {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(env.dir, "audit-topic.key"), []byte(auditTestKey+"\n"), 0o600))
	p := filepath.Join(env.dir, "flexway.yaml")
	b, err := os.ReadFile(p)
	must(t, err)
	b = append(b, "audit: { decisions: "+mode+", topic_key: \"file:./audit-topic.key\" }\n"...)
	must(t, os.WriteFile(p, b, 0o600))
	snap, err := configs.Load(p)
	must(t, err)
	must(t, env.e.Reload(context.Background(), snap))
}

// O3: each refusal cause of the decision table the gateway decides today
// is written, one JSON line each with host = the virtual cluster, method =
// KAFKA, operation = the API, code = the cause, the tenant and principal,
// the topic hashed with audit.topic_key; a raw topic name never is; an
// allowed data request is never written (counted by requests_total).
func TestAuditEachRefusalCause(t *testing.T) {
	logs := &jsonLines{}
	env := newTestEnv(t, "", WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	withAudit(t, env, "refusals")

	// Allowed data: produced, never written.
	produceN(t, env.client("acme-app"), "orders", 3, "allowed")

	refuseEachAuditCause(t, env)

	want := map[string]auditLine{
		"acl":            {Operation: "Produce", Tenant: "acme", Principal: "acme-orders-reader", Topic: audit.HashTopic(auditTestKey, "orders")},
		"unknown_topic":  {Operation: "Metadata", Tenant: "acme", Principal: "acme-app", Topic: audit.HashTopic(auditTestKey, "secret-plan-x")},
		"admin_api":      {Operation: "CreateTopics", Tenant: "acme", Principal: "acme-app", Topic: audit.HashTopic(auditTestKey, "orders")},
		"authentication": {Operation: "SaslAuthenticate", Principal: "acme-app"},
		"mechanism":      {Operation: "SaslHandshake"},
		"unsupported":    {Operation: "DescribeAcls", Tenant: "acme", Principal: "acme-app"},
	}
	got := auditLinesOf(t, logs, want)
	for code, w := range want {
		a, ok := got[code]
		if !ok {
			t.Errorf("no audit line with code %s (%s); lines: %+v", code, w.Operation, logs.audits(t))
			continue
		}
		if a.Host != "shop" || a.Method != "KAFKA" || a.Decision != "refused" || a.Tenant != w.Tenant || a.Principal != w.Principal || a.Topic != w.Topic ||
			(code == "mechanism" && a.Code != "authentication") {
			t.Errorf("%s: %+v, want host shop, method KAFKA, refused, %+v", code, a, w)
		}
	}
	var prom strings.Builder
	env.e.Metrics().WritePrometheus(&prom)
	if !strings.Contains(prom.String(), "flexway_kafka_audit_dropped_total 0") || strings.Contains(prom.String(), "flexway_kafka_audit_records_total 0") {
		t.Errorf("the audit's series: want records written, none dropped:\n%s", prom.String())
	}
	auditedOnce(t, env, logs, want)
	for _, l := range logs.all() {
		if strings.Contains(l, audit.Message) && (strings.Contains(l, `"orders"`) || strings.Contains(l, "secret-plan") ||
			strings.Contains(l, env.keys["acme-app"]) || strings.Contains(l, "wrong-secret-value")) {
			t.Errorf("an audit line holds a topic's name or a secret: %s", l)
		}
	}
}

// refuseEachAuditCause has env's gateway refuse one request for each
// cause the audit writes, each a raw request on a connection of its own
// (a library client may retry a refusal, and each retry is audited): acl
// (a receive-only key produces), unknown_topic (a topic the contract does
// not declare), admin_api (administration with an API key, no
// admin_scope), authentication (a wrong key, and a mechanism not served)
// and unsupported (an API never announced).
func refuseEachAuditCause(t *testing.T, env *testEnv) {
	// acl: a receive-only key produces.
	r := dialRaw(t, env.boot, "acme-orders-reader", env.keys["acme-orders-reader"])
	r.send(rawProduce(64))
	pr := produceAnswer()
	r.recv(pr)
	if len(pr.Topics) != 1 || pr.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("produce without send: %+v, want TOPIC_AUTHORIZATION_FAILED", pr.Topics)
	}

	// unknown_topic: a topic the contract does not declare.
	r = dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("secret-plan-x")}}
	r.send(md)
	var mdr kmsg.MetadataResponse
	mdr.Version = 12
	r.recv(&mdr)

	// admin_api: administration with an API key (no admin_scope).
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version, ct.TimeoutMillis = 7, 5000
	ct.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "orders", NumPartitions: 1, ReplicationFactor: 1}}
	r.send(ct)
	ctr := kmsg.NewPtrCreateTopicsResponse()
	ctr.Version = 7
	r.recv(ctr)
	if len(ctr.Topics) != 1 || ctr.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("CreateTopics: %+v, want TOPIC_AUTHORIZATION_FAILED", ctr.Topics)
	}

	// authentication: a wrong key.
	bad := dialPlain(t, env.boot)
	bad.saslPlain("acme-app", "wrong-secret-value")
	if code := bad.authAnswer().ErrorCode; code != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("a wrong key: error %d, want SASL_AUTHENTICATION_FAILED", code)
	}

	// authentication: a mechanism not served (SCRAM).
	if code := dialPlain(t, env.boot).handshake("SCRAM-SHA-256").ErrorCode; code != kerr.UnsupportedSaslMechanism.Code {
		t.Fatalf("SCRAM: error %d, want UNSUPPORTED_SASL_MECHANISM", code)
	}

	// unsupported: an API never announced (DescribeAcls).
	r2 := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	acl := kmsg.NewPtrDescribeACLsRequest()
	acl.Version = 1
	r2.send(acl)
}

// auditedOnce stops env's gateway (its trail written out: a second line of
// a cause would be there now) and checks each cause of want has exactly
// one audit line, of its operation, and that nothing else was written (an
// allowed request, a refusal counted twice).
func auditedOnce(t *testing.T, env *testEnv, logs *jsonLines, want map[string]auditLine) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must(t, env.e.Stop(ctx))
	lines := logs.audits(t)
	for code, w := range want {
		n := 0
		for _, a := range lines {
			if a.Operation == w.Operation && (a.Code == code || code == "mechanism" && a.Code == "authentication") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: %d audit lines of %s, want exactly one", code, n, w.Operation)
		}
	}
	if len(lines) != len(want) {
		t.Errorf("%d audit lines for %d refusals, one each: %+v", len(lines), len(want), lines)
	}
	for _, a := range lines {
		if a.Decision != "refused" {
			t.Errorf("refusals only, and an allowed request is written: %+v", a)
		}
	}
}

// auditLinesOf waits up to 20 s for an audit line of each code of want
// (of its operation; "mechanism": the authentication refused at the
// SaslHandshake) and returns those found, by code.
func auditLinesOf(t *testing.T, logs *jsonLines, want map[string]auditLine) map[string]auditLine {
	got := map[string]auditLine{}
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		for _, a := range logs.audits(t) {
			if w, ok := want[a.Code]; ok && a.Operation == w.Operation {
				got[a.Code] = a
			}
			if a.Code == "authentication" && a.Operation == "SaslHandshake" {
				got["mechanism"] = a
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return got
}

// O3, decisions: all: an administration request allowed is written too,
// its topic hashed; a data request allowed still is not.
func TestAuditAllWritesAdministration(t *testing.T) {
	oe := newAdminEnv(t)
	withAudit(t, oe.testEnv, "all")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rcs, err := oe.adminClient("orders:read orders:admin").DescribeTopicConfigs(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if rc, err := rcs.On("orders", nil); err != nil || rc.Err != nil {
		t.Fatalf("DescribeConfigs of orders with its admin_scope: %v %v", err, rc.Err)
	}
	line := oe.waitLog(10*time.Second, `msg="kafka audit"`, "operation=DescribeConfigs", "decision=allowed")
	for _, w := range []string{"host=shop", "method=KAFKA", "code=none", "tenant=acme", "topic=" + audit.HashTopic(auditTestKey, "orders")} {
		if !strings.Contains(line, w) {
			t.Errorf("audit line %q: want %s", line, w)
		}
	}
	if strings.Contains(line, "=orders ") || strings.HasSuffix(line, "=orders\n") {
		t.Errorf("the raw topic is written: %s", line)
	}
}

// O3 (issue 24.2): the refusals outside decide's verdict are audited too,
// each once: a tenant's connection bound reached at SaslAuthenticate
// (code authentication, the user and the tenant named), and a malformed
// request after authentication (code unsupported, the principal named).
func TestAuditTenantBoundAndMalformed(t *testing.T) {
	logs := &jsonLines{}
	env := newTestEnv(t, "    max_connections_per_tenant: 1\n", WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	withAudit(t, env, "refusals")
	a := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])

	// The tenant's bound: a second connection of acme is refused.
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.boot), kgo.SASL(plainAuth("acme-orders-reader", env.keys["acme-orders-reader"])), kgo.RequestRetries(0))
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err = cl.Ping(ctx)
	cancel()
	cl.Close()
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("a second acme connection: %v, want SASL_AUTHENTICATION_FAILED", err)
	}

	// A malformed request after authentication: an ApiVersions with bytes after its body.
	a.writeRaw(apiVersionsFrame(3, 9, []byte{2, 'g', 2, '1', 0, 0}))
	a.closedWithoutAnswer(3 * time.Second)

	want := map[string]auditLine{
		"authentication": {Operation: "SaslAuthenticate", Tenant: "acme", Principal: "acme-orders-reader"},
		"unsupported":    {Operation: "ApiVersions", Tenant: "acme", Principal: "acme-app"},
	}
	got := auditLinesOf(t, logs, want)
	// The trail written out: a second line of a cause would be there now.
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	must(t, env.e.Stop(sctx))
	for code, w := range want {
		a, ok := got[code]
		if !ok || a.Decision != "refused" || a.Tenant != w.Tenant || a.Principal != w.Principal || a.Host != "shop" {
			t.Errorf("%s: %+v, want refused, %+v; lines: %+v", code, a, w, logs.audits(t))
		}
		n := 0
		for _, l := range logs.audits(t) {
			if l.Code == code && l.Operation == w.Operation {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: %d audit lines of %s, want exactly one", code, n, w.Operation)
		}
	}
}
