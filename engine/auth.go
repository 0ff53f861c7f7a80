package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/decide"
	"github.com/panjf2000/gnet/v2"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// identity is a verified principal.
type identity struct {
	principal string // the key's id
	mechanism string // api_key
	tenant    string
	ops       []string
	expires   time.Time
}

// handlePreAuth serves what a connection may ask before it authenticates:
// ApiVersions, SaslHandshake, SaslAuthenticate (I5). Anything else closes.
func (cl *client) handlePreAuth(h *codec.RequestHeader, frame []byte) {
	switch h.Key {
	case 18:
		cl.scratch = cl.e.versions[cl.route.cluster.Name].AppendAnswer(cl.scratch[:0], h)
		cl.write(cl.scratch)
	case 17:
		cl.saslHandshake(h, frame[h.BodyOffset:])
	case 36:
		if cl.mech == "" {
			cl.e.refusedLine("kafka connection refused", "cause", "SaslAuthenticate before SaslHandshake")
			cl.close("sasl order")
			return
		}
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version = h.Version
		if h.Version > 2 || req.ReadFrom(frame[h.BodyOffset:]) != nil {
			cl.protocolError(*h, codec.ErrCodecShort)
			return
		}
		cl.authenticate(req.SASLAuthBytes, h)
	default:
		cl.e.refusedLine("kafka connection refused", "cause", "request before authentication", "api", decide.Name(h.Key))
		cl.close("unauthenticated request")
	}
}

func (cl *client) saslHandshake(h *codec.RequestHeader, body []byte) {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version = h.Version
	if h.Version > 1 || req.ReadFrom(body) != nil {
		cl.protocolError(*h, codec.ErrCodecShort)
		return
	}
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.Version = h.Version
	var offered []string
	if cl.route.cluster.Plain {
		offered = append(offered, "PLAIN")
	}
	resp.SupportedMechanisms = offered
	ok := false
	for _, m := range offered {
		if m == req.Mechanism {
			ok = true
		}
	}
	if ok {
		cl.mech = req.Mechanism
		cl.legacySASL = h.Version == 0
	} else {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		cl.e.refusedLine("kafka authentication refused", "cause", "mechanism not served", "mechanism", req.Mechanism, "cluster", cl.route.cluster.Name)
	}
	cl.writeKmsg(h.Key, h.Version, h.Correlation, resp)
}

// writeKmsg writes a whole answer the gateway built.
func (cl *client) writeKmsg(key, version int16, corr int32, resp kmsg.Response) {
	b := cl.scratch[:0]
	b = append(b, 0, 0, 0, 0)
	b = codec.AppendResponseHeader(b, key, version, corr)
	b = resp.AppendTo(b)
	codec.PutSize(b, len(b)-codec.SizeLen)
	cl.scratch = b
	cl.write(b)
}

// authMode says how the verdict is answered.
type authMode uint8

const (
	authSASL   authMode = iota // a SaslAuthenticate answer
	authLegacy                 // SaslHandshake v0 then raw bytes: an empty frame, or close
	authCert                   // a client certificate: nothing to answer
)

// authResult is what the worker pool hands back to the loop.
type authResult struct {
	id    *identity
	cause string // why refused (never the secret)
	user  string
}

// authenticate hands the credentials to the worker pool: hashing never
// runs on the loop (I6). h is nil for the legacy framing (SaslHandshake v0
// then raw SASL bytes). The token is copied: gnet's buffer is the loop's.
func (cl *client) authenticate(token []byte, h *codec.RequestHeader) {
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
	snap := cl.e.snap.Load()
	cl.state = stAuthing
	el := cl.c.EventLoop()
	err := cl.e.pool.Submit(func() {
		res := verifyPlain(snap, tok, time.Now())
		for i := range tok {
			tok[i] = 0
		}
		_ = el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			defer cl.e.recoverConn(cl.c, "auth")
			if cl.closed {
				return nil
			}
			cl.authDone(res, &hdr, mode, snap)
			return nil
		}))
	})
	if err != nil {
		cl.authDone(authResult{cause: "authentication pool full"}, &hdr, mode, snap)
	}
}

// verifyPlain checks a SASL PLAIN message against the key store (I1):
// "authzid NUL user NUL password", user = the key's id.
func verifyPlain(snap *configs.Snapshot, tok []byte, now time.Time) authResult {
	parts := bytes.SplitN(tok, []byte{0}, 3)
	if len(parts) != 3 {
		return authResult{cause: "malformed PLAIN message"}
	}
	authz, user, pass := parts[0], string(parts[1]), parts[2]
	if len(authz) > 0 && string(authz) != user {
		return authResult{cause: "PLAIN authorization id differs from the user", user: user}
	}
	k := snap.Keys[user]
	sum := sha256.Sum256(pass)
	if k == nil {
		// Compare anyway: the time taken says nothing of whether the id exists.
		var zero [32]byte
		subtle.ConstantTimeCompare(sum[:], zero[:])
		return authResult{cause: "unknown key", user: user}
	}
	if subtle.ConstantTimeCompare(sum[:], k.Hash[:]) != 1 {
		return authResult{cause: "key mismatch", user: user}
	}
	if !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt) {
		return authResult{cause: "expired key", user: user}
	}
	return authResult{user: user, id: &identity{principal: k.ID, mechanism: "api_key", tenant: k.Tenant, ops: k.Operations, expires: k.ExpiresAt}}
}

// validTenant: letters, digits and '-' only (I4): a dot ends the tenant in
// a name, an underscore collides with a dot in Kafka's metrics.
func validTenant(t string) bool {
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// authDone runs on the loop with the worker's verdict.
func (cl *client) authDone(res authResult, h *codec.RequestHeader, mode authMode, snap *configs.Snapshot) {
	var view *decide.View
	if res.id != nil {
		switch {
		case !validTenant(res.id.tenant):
			res.cause, res.id = "tenant missing or not letters, digits and '-'", nil
		default:
			view = decide.NewView(snap, cl.route.cluster, res.id.tenant, res.id.ops)
			if view == nil {
				res.cause, res.id = "no operation of the cluster admits the identity", nil
			}
		}
	}
	if res.id == nil {
		cl.e.refusedLine("kafka authentication refused", "cause", res.cause, "user", res.user, "cluster", cl.route.cluster.Name, "mechanism", cl.mech)
		cl.e.m.request(36, decRefused)
		if mode == authSASL {
			resp := kmsg.NewPtrSASLAuthenticateResponse()
			resp.Version = h.Version
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			resp.ErrorMessage = kmsg.StringPtr("authentication failed")
			cl.writeKmsg(36, h.Version, h.Correlation, resp)
		}
		cl.state = stPreAuth
		cl.close("authentication")
		return
	}
	cl.ident = res.id
	cl.snap = snap
	cl.state = stAuthed
	cl.e.unauth.Add(-1)
	cl.budget.Limit = int64(snap.Listener.MaxInFlightBytes)
	cl.sess = &decide.Session{
		View:     view,
		Versions: cl.e.versions[cl.route.cluster.Name],
		Brokers:  &brokerNames{e: cl.e, cluster: cl.route.cluster, up: cl.e.upstreams[cl.route.cluster.Upstream], tls: cl.route.tls},
		Limits: decide.Limits{
			MaxFetchWaitMs: int32(snap.Listener.MaxFetchWait.D() / time.Millisecond),
			FetchMaxBytes:  cl.fetchCap(),
		},
	}
	cl.e.m.request(36, decAllowed)
	switch mode {
	case authLegacy:
		cl.write([]byte{0, 0, 0, 0})
	case authSASL:
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.Version = h.Version
		cl.writeKmsg(36, h.Version, h.Correlation, resp)
	}
	cl.process()
}
