package upstream

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// Auth is one SASL exchange of the gateway with a broker, over a broker
// connection: SaslHandshake v1, then SaslAuthenticate until the mechanism
// (franz-go's) is done. It holds no socket: its caller writes the frames
// Begin and Next return and hands it each answer, blocking in the dial
// goroutine (Dial), or on the event loop for a KIP-368 re-authentication.
// Not safe for concurrent use.
type Auth struct {
	upstream string
	host     string
	mech     sasl.Mechanism
	version  int16 // of SaslAuthenticate: 1 when the brokers know it (the session's lifetime)
	fmt      *kmsg.RequestFormatter

	corr    int32 // of the request in flight
	key     int16
	sess    sasl.Session
	done    bool // the mechanism is done: the answer to the last write ends the exchange
	sentAt  time.Time
	expires time.Time
}

// authCorrBase: the correlation ids of the gateway's own SASL requests. A
// re-authentication runs while no client request is in flight on the
// connection, so they are never mistaken for a client's answer.
const authCorrBase = -1 << 30

// NewAuth starts an exchange with the broker at host (host:port, for the
// mechanism); nil when the upstream declares no SASL. The credentials are
// those in force (Update).
func (u *Upstream) NewAuth(host string) *Auth {
	m := u.mechanism()
	if m == nil {
		return nil
	}
	return &Auth{
		upstream: u.name, host: host, mech: m, version: u.saslVersion(),
		fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("flexway")),
	}
}

// saslVersion is the SaslAuthenticate version every known broker serves,
// at most 1 (the first with the session's lifetime; v2 only adds tags).
func (u *Upstream) saslVersion() int16 {
	v := int16(1)
	for _, vr := range u.Versions() {
		for _, k := range vr.ApiKeys {
			if k.ApiKey == 36 && k.MaxVersion < v {
				v = max(k.MaxVersion, 0)
			}
		}
	}
	return v
}

// Begin returns the first frame to write (SaslHandshake), its size prefix
// included.
func (a *Auth) Begin() []byte {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version = 1
	req.Mechanism = a.mech.Name()
	return a.frame(req)
}

func (a *Auth) frame(req kmsg.Request) []byte {
	a.corr++
	a.key = req.Key()
	a.sentAt = time.Now()
	return a.fmt.AppendRequest(nil, req, authCorrBase+a.corr)
}

// Next takes the answer to the last frame (whole, without its size
// prefix) and returns the next frame to write, or done. A refusal by the
// broker is an *AuthError.
func (a *Auth) Next(answer []byte) (next []byte, done bool, err error) {
	if len(answer) < 4 || int32(binary.BigEndian.Uint32(answer)) != authCorrBase+a.corr {
		return nil, false, errors.New("SASL exchange: an answer out of order")
	}
	body := answer[4:]
	switch a.key {
	case kmsg.SASLHandshake.Int16():
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.Version = 1
		if err := resp.ReadFrom(body); err != nil {
			return nil, false, fmt.Errorf("SaslHandshake answer: %w", err)
		}
		if resp.ErrorCode != 0 {
			return nil, false, &AuthError{Upstream: a.upstream, Msg: fmt.Sprintf("mechanism %s refused (%s); the broker offers %s",
				a.mech.Name(), kerr.ErrorForCode(resp.ErrorCode), strings.Join(resp.SupportedMechanisms, ", "))}
		}
		sess, first, err := a.mech.Authenticate(context.Background(), a.host)
		if err != nil {
			return nil, false, &AuthError{Upstream: a.upstream, Msg: err.Error()}
		}
		a.sess = sess
		return a.authenticate(first), false, nil
	case kmsg.SASLAuthenticate.Int16():
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.Version = a.version
		if err := resp.ReadFrom(body); err != nil {
			return nil, false, fmt.Errorf("SaslAuthenticate answer: %w", err)
		}
		if resp.ErrorCode != 0 {
			msg := kerr.ErrorForCode(resp.ErrorCode).Error()
			if resp.ErrorMessage != nil && *resp.ErrorMessage != "" {
				msg += ": " + *resp.ErrorMessage
			}
			return nil, false, &AuthError{Upstream: a.upstream, Msg: msg}
		}
		if a.done {
			a.finish(resp.SessionLifetimeMillis)
			return nil, true, nil
		}
		done, out, err := a.sess.Challenge(resp.SASLAuthBytes)
		if err != nil {
			// franz-go's errors say what the server sent wrong, never the password.
			return nil, false, &AuthError{Upstream: a.upstream, Msg: err.Error()}
		}
		a.done = done
		if done && len(out) == 0 {
			a.finish(resp.SessionLifetimeMillis)
			return nil, true, nil
		}
		return a.authenticate(out), false, nil
	}
	return nil, false, errors.New("SASL exchange: no request in flight")
}

func (a *Auth) authenticate(b []byte) []byte {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version = a.version
	req.SASLAuthBytes = b
	return a.frame(req)
}

// finish records when the session must be renewed: a broker that
// announces a lifetime (KIP-368) closes the connection at its end.
func (a *Auth) finish(lifetimeMs int64) {
	if lifetimeMs <= 0 {
		return
	}
	const maxLifetime = 365 * 24 * time.Hour
	life := min(time.Duration(lifetimeMs)*time.Millisecond, maxLifetime)
	// Before it ends, with a margin for the clocks and the exchange itself:
	// measured from the last request's write (the broker counts from its
	// read of it).
	margin := life/10 + min(time.Second, life/4)
	a.expires = a.sentAt.Add(life - margin)
}

// RenewBy is when the session must be renewed (zero: the broker announced
// no lifetime).
func (a *Auth) RenewBy() time.Time { return a.expires }

// Mechanism is the exchange's mechanism name.
func (a *Auth) Mechanism() string { return a.mech.Name() }
