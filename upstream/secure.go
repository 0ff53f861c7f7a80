package upstream

// The gateway's own face to the brokers (U1, seed 001 "Les amonts"): TLS
// (ca_file, cert_file/key_file, server_name) and SASL (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512), for the control client and for every broker connection.
// The SCRAM exchange is franz-go's (pkg/sasl/scram); this file only frames
// it in SaslHandshake and SaslAuthenticate requests. No secret (password,
// key) is ever part of an error.

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// security is what an upstream presents to its brokers, replaced whole at
// a reload (Update): a connection dialed after it uses the new one.
type security struct {
	tls  *tls.Config    // nil: clear text
	mech sasl.Mechanism // nil: no SASL
}

// securityHolder is the upstream's current security, read by dials on any
// goroutine, and the memory of a refusal of its credentials.
type securityHolder struct {
	p atomic.Pointer[security]
	// refusedUntil (unix ns): a broker refused the credentials in force;
	// until then new client sessions are refused at once (Refused) rather
	// than each dial meeting the same refusal. 0: none.
	refusedUntil atomic.Int64
}

// refusalHold is how long a refusal of the gateway's credentials is
// remembered: then one dial tries them again.
const refusalHold = 10 * time.Second

// Refused reports whether a broker refused the gateway's credentials in
// the last moments (since then no dial succeeded, no reload read them
// again): a client authenticating to a cluster of this upstream is refused
// at once, SASL_AUTHENTICATION_FAILED, rather than served requests that
// cannot reach the brokers.
func (u *Upstream) Refused() bool {
	until := u.sec.refusedUntil.Load()
	return until != 0 && time.Now().UnixNano() < until
}

func (h *securityHolder) load() *security {
	if s := h.p.Load(); s != nil {
		return s
	}
	return &security{}
}

// buildSecurity reads cfg's TLS files and SASL credentials. cfg is as
// configs.Load returns it: paths resolved, the password read from its file.
func buildSecurity(name string, cfg *configs.Upstream) (*security, error) {
	s := &security{}
	if t := cfg.TLS; t != nil {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
		if t.CAFile != "" {
			pem, err := os.ReadFile(t.CAFile)
			if err != nil {
				return nil, fmt.Errorf("%s: tls.ca_file: %w", name, err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("%s: tls.ca_file %s: no PEM certificate", name, t.CAFile)
			}
			tc.RootCAs = pool
		}
		if t.CertFile != "" || t.KeyFile != "" {
			cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
			if err != nil {
				// tls's errors name the files' problem, never the key's bytes.
				return nil, fmt.Errorf("%s: tls.cert_file/key_file: %w", name, err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		s.tls = tc
	}
	if a := cfg.SASL; a != nil {
		user, pass := a.Username, string(a.Password)
		switch a.Mechanism {
		case "PLAIN":
			s.mech = plain.Auth{User: user, Pass: pass}.AsMechanism()
		case "SCRAM-SHA-256":
			s.mech = scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
		case "SCRAM-SHA-512":
			s.mech = scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
		default:
			return nil, fmt.Errorf("%s: sasl.mechanism %q: not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512", name, a.Mechanism)
		}
	}
	return s, nil
}

// Update takes the TLS files and SASL credentials of cfg (a reload: the
// password file and the certificates are read again). Connections already
// open keep theirs until they re-authenticate or close; the next dial and
// the next re-authentication use the new ones. On an error nothing changes.
func (u *Upstream) Update(cfg *configs.Upstream) error {
	s, err := buildSecurity(u.name, cfg)
	if err != nil {
		return err
	}
	u.sec.p.Store(s)
	u.sec.refusedUntil.Store(0)
	return nil
}

// clientOpts are the control client's TLS and SASL options (Refresh).
func (u *Upstream) clientOpts() []kgo.Opt {
	s := u.sec.load()
	var opts []kgo.Opt
	if s.tls != nil {
		opts = append(opts, kgo.DialTLSConfig(s.tls.Clone()))
	}
	if s.mech != nil {
		opts = append(opts, kgo.SASL(s.mech))
	}
	return opts
}

// tlsFor is the TLS configuration of a dial to host: server_name when
// given, else the broker's host.
func (s *security) tlsFor(host string) *tls.Config {
	tc := s.tls.Clone()
	if tc.ServerName == "" {
		tc.ServerName = host
	}
	return tc
}

// AuthError is a broker's refusal of the gateway's credentials (or of its
// mechanism): the engine logs it as "kafka upstream authentication failed".
type AuthError struct {
	Upstream string
	Msg      string // the broker's message or the mechanism's error, never a secret
}

func (e *AuthError) Error() string {
	return "upstream " + e.Upstream + ": authentication failed: " + e.Msg
}

// IsAuthError reports whether err is a refusal of the gateway's credentials.
func IsAuthError(err error) bool {
	var ae *AuthError
	return errors.As(err, &ae)
}

// TLSError is a failed TLS handshake with a broker (another CA, another
// name, a client certificate refused).
type TLSError struct {
	Upstream, Broker string
	Err              error
}

func (e *TLSError) Error() string {
	return "upstream " + e.Upstream + ": broker " + e.Broker + ": TLS handshake: " + e.Err.Error()
}

func (e *TLSError) Unwrap() error { return e.Err }

// mechanism returns the upstream's current SASL mechanism (nil: none).
func (u *Upstream) mechanism() sasl.Mechanism { return u.sec.load().mech }
