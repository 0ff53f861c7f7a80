package session

import (
	"context"
	"time"

	"github.com/flexway/flexway/audit"
	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/engine/signals"
)

// The audit trail (O3): the hook at the decision point. The loop builds a
// Record and hands it to the trail's bounded queue (audit.Trail.Add never
// blocks); the trail's goroutine hashes the topics and writes the line into
// the engine's log stream (JSON on stderr under systemd: the journal).
// Allowed data requests are never written: flexway_kafka_requests_total
// counts them.

// auditQueue is the trail's queue, in records: a few seconds of a
// refusal storm; beyond, what is dropped is counted
// (flexway_kafka_audit_dropped_total).
const auditQueue = 4096

// StartAudit starts the trail, whatever the configuration: a reload may
// turn audit on. Its three series are the audit's own. A record of a
// connection not authenticated yet falls under the seed's bound on the
// refusal lines before authentication (O2: 10 a second, issue 33.3); what
// the bound leaves out is counted (MetricAuditUnauthenticatedDropped) and
// the next line written says how many (lines_dropped).
func (env *Env) StartAudit() {
	m := env.Signals.Metrics()
	env.Audit = audit.New(env.Log.Handler(), auditQueue,
		m.NewCounter(`flexway_kafka_audit_dropped_total`),
		m.NewCounter(`flexway_kafka_audit_records_total`))
	env.Audit.Limit(signals.NewRateLimiter(signals.RefusalsPerSecond), m.NewCounter(MetricAuditUnauthenticatedDropped))
}

// MetricAuditUnauthenticatedDropped counts the audit records of
// unauthenticated connections left out by the 10-a-second bound.
const MetricAuditUnauthenticatedDropped = `flexway_kafka_audit_unauthenticated_dropped_total`

// OperationMalformed is the audit's operation of a request whose header
// did not parse: its API is unknown (never the key 0 it reads as).
const OperationMalformed = "malformed"

// OperationCertificate is the audit operation of a client certificate
// refused (unknown, its tenant's connection bound reached, no operation of
// the cluster for it): mTLS authenticates in the TLS handshake, with no
// Kafka request to name (issue 34.6).
const OperationCertificate = "certificate"

// mechCert is clientAuth.mech for a client certificate (tls.go).
const mechCert = "mtls"

// StopAudit writes what is queued (bounded by ctx).
func (env *Env) StopAudit(ctx context.Context) {
	if env.Audit != nil {
		env.Audit.Close(ctx)
	}
}

// auditMode is what the snapshot asks the trail to write.
func auditMode(snap *configs.Snapshot) audit.Mode {
	if snap == nil || snap.File == nil || snap.File.Audit == nil {
		return audit.Off
	}
	return audit.ParseMode(snap.File.Audit.Decisions)
}

// auditRequest writes decide's verdict on an authenticated request when
// the trail asks for it: every refusal (a request refused in part is
// refused), and with "all" every administration request. frame is the
// request after its size prefix. Nothing is allocated for an allowed data
// request.
func (cl *auditor) auditRequest(h *codec.RequestHeader, frame []byte, p *decide.Pending, out decide.Outcome) {
	mode := auditMode(cl.snap)
	if mode == audit.Off {
		return
	}
	code, topic := p.Refused()
	refused := out != decide.Forward || code != 0
	admin := audit.IsAdmin(h.Key)
	if !refused && !(admin && mode == audit.All) {
		return
	}
	r := cl.auditRecord(cl.snap, decide.Name(h.Key))
	if refused {
		r.Decision = signals.Refused.String()
		r.Cause = signals.RefusalCause(h.Key, out, code, p.Cause).String()
	}
	if admin {
		r.Admin, r.Key, r.Version = true, h.Key, h.Version
		r.Body = append([]byte(nil), frame[h.BodyOffset:]...)
	} else if topic != "" {
		r.Topics = []string{topic}
	}
	cl.env.Audit.Add(r)
}

// auditAuthRefused writes a SASL authentication refused (the user the
// credential named, never the credential): a refused request.
// A client certificate refused is audited under OperationCertificate: it
// sent no request (issue 34.6).
func (cl *auditor) auditAuthRefused(res *auth.Result) {
	tenant := ""
	if res.ID != nil { // re-authentication as another principal
		tenant = res.ID.Tenant
	}
	if cl.auth.mech == mechCert {
		cl.auditRefusalOf(OperationCertificate, signals.CauseAuthentication, res.User, tenant)
		return
	}
	cl.auditSASLRefused(codec.KeySASLAuthenticate, res.User, tenant)
}

// auditSASLRefused writes a SASL request refused (cause authentication):
// a mechanism not served (SaslHandshake), a credential refused or a
// tenant's connection bound reached (SaslAuthenticate).
func (cl *auditor) auditSASLRefused(key int16, user, tenant string) {
	cl.auditRefusalOf(decide.Name(key), signals.CauseAuthentication, user, tenant)
}

// auditMalformed writes a malformed request (issue 24.2): under its API
// when its header parsed (its body did not), OperationMalformed when the
// header itself did not (issue 33.3).
func (cl *auditor) auditMalformed(h *codec.RequestHeader) {
	op := OperationMalformed
	if h.BodyOffset > 0 {
		op = decide.Name(h.Key)
	}
	cl.auditRefusalOf(op, signals.CauseUnsupported, "", "")
}

// auditRefusalOf writes a request refused outside decide's verdict (no
// topic): a SASL request, a malformed request (issue 24.2), under
// operation op. user and tenant, when given, stand for the connection's
// own. Before authentication the record is anonymous: bounded in rate
// (StartAudit).
func (cl *auditor) auditRefusalOf(op string, cause signals.Cause, user, tenant string) {
	snap := cl.env.Snap.Load() // the configuration in force: a connection's own is the one it authenticated under
	if auditMode(snap) == audit.Off {
		return
	}
	r := cl.auditRecord(snap, op)
	r.Anonymous = cl.auth.state != stAuthed
	r.Decision, r.Cause = signals.Refused.String(), cause.String()
	if user != "" {
		r.Principal = user
	}
	if tenant != "" {
		r.Tenant = tenant
	}
	cl.env.Audit.Add(r)
}

// auditRecord is the record of a request of cl to api, allowed until said otherwise.
func (cl *auditor) auditRecord(snap *configs.Snapshot, api string) audit.Record {
	r := audit.Record{Time: time.Now(), API: api, Decision: signals.Allowed.String(), Cause: signals.CauseNone.String(),
		Mechanism: cl.auth.mech}
	if c := cl.route.Cluster; c != nil {
		r.Cluster = c.Name
	}
	if id := cl.auth.ident; id != nil {
		r.Tenant, r.Principal, r.Actors = id.Tenant, id.Principal, id.Actors // the act chain (issue 24.7)
	}
	if snap.File.Audit != nil {
		r.HashKey = snap.File.Audit.TopicKey.Value()
	}
	return r
}
