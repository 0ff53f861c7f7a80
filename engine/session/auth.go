package session

import (
	"context"
	"time"

	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/engine/signals"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handlePreAuth serves what a connection may ask before it authenticates:
// ApiVersions, SaslHandshake, SaslAuthenticate (I5). Anything else closes.
func (cl *authn) handlePreAuth(h *codec.RequestHeader, frame []byte) {
	switch h.Key {
	case codec.KeyApiVersions:
		cl.lp.scratch = cl.env.versions(cl.route.Cluster.Name).AppendAnswer(cl.lp.scratch[:0], h)
		cl.client().answers().write(cl.lp.scratch)
	case codec.KeySASLHandshake:
		cl.saslHandshake(h, frame[h.BodyOffset:])
	case codec.KeySASLAuthenticate:
		if cl.auth.mech == "" {
			cl.client().close(signals.CloseSASLOrder)
			return
		}
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version = h.Version
		if h.Version > 2 || req.ReadFrom(frame[h.BodyOffset:]) != nil {
			cl.client().protocolError(*h, codec.ErrCodecShort)
			return
		}
		cl.authenticate(req.SASLAuthBytes, h)
	default:
		cl.client().close(signals.CloseUnauthenticated, "api", decide.Name(h.Key))
	}
}

func (cl *authn) saslHandshake(h *codec.RequestHeader, body []byte) {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version = h.Version
	if h.Version > 1 || req.ReadFrom(body) != nil {
		cl.client().protocolError(*h, codec.ErrCodecShort)
		return
	}
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.Version = h.Version
	var offered []string
	if cl.route.Cluster.Plain {
		offered = append(offered, "PLAIN")
	}
	if cl.route.Cluster.OAuth && cl.env.Sec.OAuth.Load() != nil {
		offered = append(offered, "OAUTHBEARER")
	}
	resp.SupportedMechanisms = offered
	ok := false
	for _, m := range offered {
		if m == req.Mechanism {
			ok = true
		}
	}
	if ok {
		cl.auth.mech = req.Mechanism
		cl.auth.legacySASL = h.Version == 0
	} else {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		cl.env.RefusedLine("kafka authentication refused", "cause", "mechanism not served", "mechanism", auth.BoundName(req.Mechanism), "cluster", cl.route.Cluster.Name)
		cl.client().auditor().auditSASLRefused(h.Key, "", "")
	}
	cl.writeKmsg(h.Key, h.Version, h.Correlation, resp)
}

// writeKmsg writes a whole answer the gateway built.
func (cl *authn) writeKmsg(key, version int16, corr int32, resp kmsg.Response) {
	cl.client().answers().write(cl.frameKmsg(key, version, corr, resp))
}

// authMode says how the verdict is answered.
type authMode uint8

const (
	authSASL   authMode = iota // a SaslAuthenticate answer
	authLegacy                 // SaslHandshake v0 then raw bytes: an empty frame, or close
	authCert                   // a client certificate: nothing to answer
	authReauth                 // KIP-368: a re-authentication on an open session
)

// authenticate hands the credentials to the worker pool: hashing never
// runs on the loop (I6). h is nil for the legacy framing (SaslHandshake v0
// then raw SASL bytes). The token is copied: gnet's buffer is the loop's.
func (cl *authn) authenticate(token []byte, h *codec.RequestHeader) {
	tok := append([]byte(nil), token...)
	var hdr codec.RequestHeader
	if h != nil {
		hdr = *h
		hdr.ClientID = nil
	}
	mode := authSASL
	if h == nil {
		mode = authLegacy
	}
	if cl.auth.state == stAuthed {
		mode = authReauth
	}
	snap := cl.env.Snap.Load()
	if mode == authReauth {
		cl.auth.reauthing, cl.auth.reauthFrom = true, cl.clock.reqSince
	} else {
		cl.auth.state = stAuthing
	}
	mech := cl.auth.mech
	err := cl.env.Pools.Auth.Submit(func() {
		var res auth.Result
		if mech == "OAUTHBEARER" {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res = cl.env.Sec.OAuth.Load().Verify(ctx, snap, tok, time.Now())
			cancel()
		} else {
			res = auth.VerifyPlain(snap, tok, time.Now())
		}
		for i := range tok {
			tok[i] = 0
		}
		_ = cl.lp.RunFor("auth", cl, func() {
			if !cl.closed {
				cl.authDone(res, &hdr, mode, snap)
			}
		})
	})
	if err != nil {
		cl.authDone(auth.Result{Cause: causePoolFull}, &hdr, mode, snap)
	}
}

// authDone runs on the loop with the worker's verdict.
func (cl *authn) authDone(res auth.Result, h *codec.RequestHeader, mode authMode, snap *configs.Snapshot) {
	if mode == authReauth {
		cl.reauthDone(res, h, snap)
		return
	}
	var view *decide.View
	guessed := res.ID == nil && res.Cause != causePoolFull // the credential itself refused (loginguard.go)
	res.ID = cl.env.identity(snap, res.ID)
	if res.ID != nil {
		switch {
		case !configs.ValidTenant(res.ID.Tenant):
			res.Cause, res.ID = "tenant missing or not letters, digits and '-'", nil
		default:
			view = cl.env.view(snap, cl.route.Cluster, res.ID)
			if view == nil {
				res.Cause, res.ID = "no operation of the cluster admits the identity", nil
			}
		}
	}
	if res.ID != nil && cl.env.upstreamRefused(cl.route.Cluster.Upstream) { // the gateway's own credentials (upstream_secure.go)
		res.Cause, res.ID = "the upstream refuses the gateway's credentials", nil
	}
	if res.ID != nil {
		// B1: the tenant's connections and new connections a second.
		l := snap.Listener
		ten, bound := cl.env.Bounds.Tenants.Take(res.ID.Tenant, l.ConnectionsPerTenant(), l.ConnectionRatePerTenant(), time.Now())
		if ten == nil {
			cl.env.Signals.Refused(bound.String(), res.ID.Tenant)
			// Seed 002: past a tenant's bound the answer is SASL_AUTHENTICATION_FAILED, logged as such.
			cl.env.RefusedLine("kafka authentication refused", "cause", "the tenant's connection bound is reached", "bound", bound.String(), "user", res.User, "tenant", res.ID.Tenant, "cluster", cl.route.Cluster.Name, "mechanism", cl.auth.mech)
			cl.client().auditor().auditAuthRefused(&res)
			cl.authFailed(h, mode)
			return
		}
		cl.tenant = ten
	}
	if res.ID == nil {
		cl.credentialRefused(&res, h, mode, guessed)
		return
	}
	cl.auth.ident = res.ID
	cl.snap = snap
	cl.auth.state = stAuthed
	lifetime := cl.startSession(snap)
	cl.env.Bounds.Unauth.Add(-1)
	cl.budget.Limit = int64(snap.Listener.MaxInFlightBytes)
	cl.budget.Share(&cl.tenant.Share) // what it read meanwhile counts there too (inbound.go)
	cl.sess = &decide.Session{
		Scratch:  &cl.lp.judge,
		View:     view,
		Versions: cl.env.versions(cl.route.Cluster.Name),
		Brokers:  cl.env.brokers(snap, cl.route.Cluster, cl.route.TLS),
		Limits: decide.Limits{
			MaxFetchWaitMs:     int32(snap.Listener.MaxFetchWait.D() / time.Millisecond),
			MaxTopicPartitions: int32(snap.Listener.MaxTopicPartitions),
			MaxRequestBytes:    int64(snap.Listener.MaxRequestBytes),
		},
	}
	cl.client().auditor().setSeries(cl.env.Signals.Tenant(cl.route.Cluster.Name, res.ID.Tenant), signals.MechOf(res.ID.Mechanism))
	if mode != authCert {
		cl.client().auditor().count(codec.KeySASLAuthenticate, signals.Allowed, signals.CauseNone, 0)
	}
	switch mode {
	case authLegacy:
		cl.client().answers().write([]byte{0, 0, 0, 0})
	case authSASL:
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.Version = h.Version
		resp.SessionLifetimeMillis = lifetime.Milliseconds()
		cl.writeKmsg(codec.KeySASLAuthenticate, h.Version, h.Correlation, resp)
	}
	cl.client().process()
}

// authFailed answers SASL_AUTHENTICATION_FAILED (I4, B1) and closes. A
// refusal by a tenant bound is counted as the bound's, never also as an
// authentication (seed 001): the caller counts.
func (cl *authn) authFailed(h *codec.RequestHeader, mode authMode) {
	if mode == authSASL {
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.Version = h.Version
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr("authentication failed")
		cl.writeKmsg(codec.KeySASLAuthenticate, h.Version, h.Correlation, resp)
	}
	cl.auth.state = stPreAuth
	cl.client().close(signals.CloseAuthFailed)
}

// startSession sets the session's end (S3): the smallest of
// max_session_lifetime and the credential's own end (a key's expires_at,
// a token's exp, a certificate's NotAfter). It returns the lifetime to
// announce (KIP-368).
func (cl *authn) startSession(snap *configs.Snapshot) time.Duration {
	now := time.Now()
	max := snap.Listener.MaxSessionLifetime.D()
	if c := cl.env.SessionLifetime; c > 0 && c < max {
		max = c
	}
	end := now.Add(max)
	if e := cl.auth.ident.Expires; !e.IsZero() && e.Before(end) {
		end = e
	}
	cl.auth.sessEnd = end
	return end.Sub(now)
}

// checkSession runs before each request of an authenticated session: a
// session past its end without re-authentication is closed (I6), and so is
// one a reload revoked (S2). After a reload the session takes the
// configuration in force (view, bounds, timeouts) at its next request.
func (cl *authn) checkSession() bool {
	if cl.auth.revoked != "" {
		cl.client().close(signals.CloseRevoked, "cluster", cl.route.Cluster.Name, "tenant", cl.auth.ident.Tenant, "principal", cl.auth.ident.Principal, "cause", cl.auth.revoked)
		return false
	}
	if !cl.auth.sessEnd.IsZero() && !time.Now().Before(cl.auth.sessEnd) {
		cl.client().close(signals.CloseSessionEnded, "cluster", cl.route.Cluster.Name, "tenant", cl.auth.ident.Tenant, "principal", cl.auth.ident.Principal)
		return false
	}
	if snap := cl.env.Snap.Load(); snap != cl.snap {
		cl.adopt(snap)
	}
	return !cl.closed
}

// adopt moves an open session to a new snapshot (after a reload whose
// revocation check passed): the view is rebuilt from the new contract and
// the bounds in force apply.
func (cl *authn) adopt(snap *configs.Snapshot) {
	cl.snap = snap
	cl.budget.Limit = int64(snap.Listener.MaxInFlightBytes)
	cl.sess.Limits.MaxFetchWaitMs = int32(snap.Listener.MaxFetchWait.D() / time.Millisecond)
	cl.sess.Limits.MaxTopicPartitions = int32(snap.Listener.MaxTopicPartitions)
	cl.sess.Limits.MaxRequestBytes = int64(snap.Listener.MaxRequestBytes)
	cluster := snap.Clusters[cl.route.Cluster.Name]
	if cluster == nil { // a reload removed it (CloseRemoved closes at once; kept safe here)
		cl.client().closeRemoved()
		return
	}
	cl.route.Cluster = cluster
	view := cl.env.view(snap, cluster, cl.auth.ident)
	if view == nil {
		cl.auth.revoked = "no operation of the cluster admits the identity any more"
		cl.checkSession()
		return
	}
	cl.sess.View = view
	cl.sess.Brokers = cl.env.brokers(snap, cluster, cl.route.TLS)
}

// reauthRequest serves SaslHandshake and SaslAuthenticate on an open
// session (KIP-368): the answers keep their place among the others.
func (cl *authn) reauthRequest(h *codec.RequestHeader, frame []byte) {
	body := frame[h.BodyOffset:]
	if h.Key == codec.KeySASLHandshake {
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version = h.Version
		if h.Version != 1 || req.ReadFrom(body) != nil || req.Mechanism != cl.auth.mech {
			cl.client().close(signals.CloseReauthMechanism, "cluster", cl.route.Cluster.Name, "tenant", cl.auth.ident.Tenant)
			return
		}
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.Version = h.Version
		resp.SupportedMechanisms = []string{cl.auth.mech}
		cl.client().answers().answerLocal(cl.frameKmsg(17, h.Version, h.Correlation, resp))
		return
	}
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version = h.Version
	if h.Version > 2 || req.ReadFrom(body) != nil || cl.auth.mech == mechCert {
		cl.client().close(signals.CloseReauthMalformed, "cluster", cl.route.Cluster.Name, "tenant", cl.auth.ident.Tenant)
		return
	}
	cl.authenticate(req.SASLAuthBytes, h)
}

// reauthDone: a re-authentication must prove the same principal; it takes
// no connection-rate token; the session gets a new end.
func (cl *authn) reauthDone(res auth.Result, h *codec.RequestHeader, snap *configs.Snapshot) {
	cl.auth.reauthing = false
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.Version = h.Version
	if res.ID == nil || res.ID.Principal != cl.auth.ident.Principal || res.ID.Tenant != cl.auth.ident.Tenant || res.ID.Mechanism != cl.auth.ident.Mechanism {
		cause := res.Cause
		if res.ID != nil {
			cause = "re-authentication as another principal"
		}
		cl.env.Log.Warn("kafka authentication refused", "cause", cause, "user", res.User, "cluster", cl.route.Cluster.Name, "tenant", cl.auth.ident.Tenant, "mechanism", cl.auth.mech)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr("authentication failed")
		p := cl.client().answers().answerLocal(cl.frameKmsg(codec.KeySASLAuthenticate, h.Version, h.Correlation, resp))
		cl.client().auditor().countLocal(codec.KeySASLAuthenticate, p, signals.Refused, signals.CauseAuthentication, cl.auth.reauthFrom)
		cl.client().auditor().auditAuthRefused(&res)
		cl.client().close(signals.CloseReauthRefused)
		return
	}
	cl.auth.ident = cl.env.identity(snap, res.ID)
	lifetime := cl.startSession(snap)
	cl.adopt(snap) // the new token's scopes, and the snapshot in force
	if cl.closed {
		cl.client().auditor().count(codec.KeySASLAuthenticate, signals.Allowed, signals.CauseNone, 0)
		return
	}
	resp.SessionLifetimeMillis = lifetime.Milliseconds()
	p := cl.client().answers().answerLocal(cl.frameKmsg(36, h.Version, h.Correlation, resp))
	cl.client().auditor().countLocal(codec.KeySASLAuthenticate, p, signals.Allowed, signals.CauseNone, cl.auth.reauthFrom)
	cl.client().process()
}

// frameKmsg encodes a whole answer frame into the loop's scratch (it is
// written, or queued, by a copy before the loop serves anything else).
func (cl *authn) frameKmsg(key, version int16, corr int32, resp kmsg.Response) []byte {
	b := cl.lp.scratch[:0]
	b = append(b, 0, 0, 0, 0)
	b = codec.AppendResponseHeader(b, key, version, corr)
	b = resp.AppendTo(b)
	codec.PutSize(b, len(b)-codec.SizeLen)
	cl.lp.scratch = b
	return b
}
