package engine

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// auditCause is one refusal of the seed's troubleshooting table: what
// drives it, the error the client gets, the audit line it is owed.
type auditCause struct {
	name      string
	user      string
	req       func() (kmsg.Request, kmsg.Response)
	code      int16 // the client's error
	operation string
	cause     string // the audit's code
}

// The troubleshooting table's authorization refusals (seed 002).
func authorizationCauses() []auditCause {
	initPID := func(txn *string) func() (kmsg.Request, kmsg.Response) {
		return func() (kmsg.Request, kmsg.Response) {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.Version, req.TransactionalID, req.TransactionTimeoutMillis = 4, txn, 60000
			resp := kmsg.NewPtrInitProducerIDResponse()
			resp.Version = 4
			return req, resp
		}
	}
	join := func() (kmsg.Request, kmsg.Response) {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version, req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 5, "billing", 30000, 30000
		req.ProtocolType = "consumer"
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0}}}
		resp := kmsg.NewPtrJoinGroupResponse()
		resp.Version = 5
		return req, resp
	}
	return []auditCause{
		{"an idempotent producer of a session that writes nothing", "acme-orders-reader", initPID(nil),
			kerr.ClusterAuthorizationFailed.Code, "InitProducerId", "acl"},
		{"a transactional id without an operation of transactions", "acme-orders-reader", initPID(kmsg.StringPtr("tx")),
			kerr.TransactionalIDAuthorizationFailed.Code, "InitProducerId", "acl"},
		{"a group joined without a receive operation", "acme-orders-producer", join,
			kerr.GroupAuthorizationFailed.Code, "JoinGroup", "acl"},
	}
}

// errorOf reads the error code of the answers the causes get.
func errorOf(resp kmsg.Response) int16 {
	switch r := resp.(type) {
	case *kmsg.InitProducerIDResponse:
		return r.ErrorCode
	case *kmsg.JoinGroupResponse:
		return r.ErrorCode
	}
	return -2
}

// O3 (issue 24.2): each authorization refusal of the seed's
// troubleshooting table gets its error and exactly one audit line, with
// its operation, its code, the tenant and the principal.
func TestAuditAuthorizationRefusals(t *testing.T) {
	logs := &jsonLines{}
	env := newTestEnv(t, "", WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	withAudit(t, env, "refusals")
	causes := authorizationCauses()
	for i, c := range causes {
		r := dialRaw(t, env.boot, c.user, env.keys[c.user])
		req, resp := c.req()
		r.send(req)
		r.recv(resp)
		if got := errorOf(resp); got != c.code {
			t.Fatalf("%s: error %d, want %d", c.name, got, c.code)
		}
		waitUntil(t, 10*time.Second, c.name+": its audit line", func() bool { return len(logs.audits(t)) > i })
		r.c.Close()
	}
	// The trail written out: a second line of a cause would be there now.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must(t, env.e.Stop(ctx))
	lines := logs.audits(t)
	if len(lines) != len(causes) {
		t.Fatalf("%d audit lines for %d refusals: %+v", len(lines), len(causes), lines)
	}
	for i, c := range causes {
		a := lines[i]
		if a.Operation != c.operation || a.Code != c.cause || a.Decision != "refused" || a.Tenant != "acme" || a.Principal != c.user || a.Host != "shop" {
			t.Errorf("%s: %+v, want %s refused %s by acme's %s", c.name, a, c.operation, c.cause, c.user)
		}
	}
}

// O3 (issue 24.2): the troubleshooting table's POLICY_VIOLATION on Produce,
// the tenant's day budget spent, gets exactly one audit line (code quota)
// per refused Produce; the admitted ones none.
func TestAuditBudgetSpent(t *testing.T) {
	srv := testkit.StartRedis(t)
	t.Setenv("COUNTERS_URL", srv.URL())
	logs := &jsonLines{}
	env := newTestEnvWith(t, countersConfig("{ day: 2 }", "100ms"), WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	withAudit(t, env, "refusals")
	cl := env.client("acme-app", kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
	pctx, pcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer pcancel()
	var errs []error
	for i := 0; i < 3; i++ {
		errs = append(errs, cl.ProduceSync(pctx, &kgo.Record{Topic: "orders", Value: []byte("budget")}).FirstErr())
	}
	if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], kerr.PolicyViolation) {
		t.Fatalf("Produce errors %v, want two admitted, then POLICY_VIOLATION", errs)
	}
	waitUntil(t, 10*time.Second, "the refusal's audit line", func() bool { return len(logs.audits(t)) > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must(t, env.e.Stop(ctx))
	lines := logs.audits(t)
	if len(lines) != 1 || lines[0].Operation != "Produce" || lines[0].Code != "quota" || lines[0].Tenant != "acme" || lines[0].Principal != "acme-app" {
		t.Fatalf("audit lines %+v, want one: Produce refused, code quota, acme's acme-app", lines)
	}
}

// O3 (issue 24.2): the bounded administration's POLICY_VIOLATION (seed
// 002's troubleshooting table: too many partitions, a configuration
// outside the list or a value outside its bounds) gets its error and
// exactly one audit line each, with its operation and the cause admin_api.
func TestAuditAdminBounds(t *testing.T) {
	oe := newAdminEnv(t)
	withAudit(t, oe.testEnv, "refusals")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := &adminE2E{ctx: ctx, oe: oe}
	admin := oe.adminClient("orders:read orders:admin")
	want := []string{"CreateTopics", "CreateTopics", "IncrementalAlterConfigs"}
	wantErr(t, "too many partitions", a.createOne(t, admin, adminMaxPartitions+1, nil, "events"), kerr.PolicyViolation)
	wantErr(t, "unclean.leader.election.enable", a.createOne(t, admin, 2, map[string]*string{"unclean.leader.election.enable": kmsgStr("true")}, "events"), kerr.PolicyViolation)
	wantErr(t, "retention.ms=-1", a.alterOne(t, admin, "orders", setConfig("retention.ms", "-1")), kerr.PolicyViolation)
	stop, cancelStop := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelStop()
	must(t, oe.e.Stop(stop)) // the trail written out
	var got []string
	for {
		select {
		case line := <-oe.logs.ch:
			if strings.Contains(line, `msg="kafka audit"`) {
				got = append(got, line)
			}
			continue
		default:
		}
		break
	}
	if len(got) != len(want) {
		t.Fatalf("%d audit lines for %d refusals:\n%s", len(got), len(want), strings.Join(got, ""))
	}
	for i, line := range got {
		if !strings.Contains(line, "operation="+want[i]) || !strings.Contains(line, "decision=refused code=admin_api") || !strings.Contains(line, "tenant=acme") {
			t.Errorf("audit line %d: %s, want %s refused (admin_api) for acme", i, line, want[i])
		}
	}
}

// O3 (issue 24.2): a tenant's connection rate reached at SaslAuthenticate
// (max_connection_rate_per_tenant) is audited once per refused connection,
// code authentication, the tenant named.
func TestAuditTenantConnectionRate(t *testing.T) {
	logs := &jsonLines{}
	env := newTestEnv(t, "    max_connection_rate_per_tenant: 1\n", WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	withAudit(t, env, "refusals")
	refused := 0
	// Two connections at once, again until a pair falls in one second.
	for try := 0; refused == 0 && try < 10; try++ {
		for i := 0; i < 2; i++ {
			c := dialPlain(t, env.boot)
			c.saslPlain("acme-app", env.keys["acme-app"])
			if c.authAnswer().ErrorCode == kerr.SaslAuthenticationFailed.Code {
				refused++
			}
		}
	}
	if refused == 0 {
		t.Fatal("no connection refused at a rate of 1 a second in 10 pairs")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must(t, env.e.Stop(ctx)) // the trail written out
	n := 0
	for _, a := range logs.audits(t) {
		if a.Operation != "SaslAuthenticate" || a.Code != "authentication" || a.Decision != "refused" || a.Tenant != "acme" {
			t.Errorf("audit line %+v, want SaslAuthenticate refused, authentication, acme", a)
		}
		n++
	}
	if n != refused {
		t.Fatalf("%d audit lines for %d refused connections", n, refused)
	}
}
