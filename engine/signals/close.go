package signals

import (
	"context"
	"log/slog"
)

// CloseCause is why the gateway closes a client connection. Its log line
// and its metric label come from one table, closeCauses: Set.Closing logs
// the line (with the attributes the call site knows) and counts the label.
type CloseCause uint8

const (
	// Before authentication (the rate-limited refusal line, O2).
	CloseTLSOnPlaintext CloseCause = iota
	ClosePreAuthTooLarge
	ClosePreAuthMalformed
	CloseSASLOrder
	CloseUnauthenticated
	CloseAuthFailed
	CloseAuthTimeout
	CloseHelloTooLarge
	CloseBadHello
	CloseUnknownSNI
	CloseHandshakePool
	CloseHandshake
	CloseCertUnknown
	CloseSameCluster // U3: logged by the engine's refusedCluster

	// An authenticated session.
	CloseTooLarge
	CloseOverBudget // B2: a request that can never fit its connection's in-flight budget
	CloseMalformed
	CloseRefusedAPI
	CloseTenantShare
	CloseRevoked
	CloseClusterRemoved // S1: a reload removed the connection's virtual cluster
	CloseSessionEnded
	CloseCertSessionEnded
	CloseReauthMechanism
	CloseReauthMalformed
	CloseReauthRefused
	ClosePartialFrame
	CloseIdle
	CloseWriteTimeout
	CloseTLSRead

	// The broker side.
	CloseUnknownBroker
	CloseDialFailed
	CloseDialFailedAgain // a broker's dial failed again before any succeeded: counted, not logged
	CloseAnswerTooLarge
	CloseAnswerOutOfOrder
	CloseAnswerMalformed
	CloseBrokerClosed
	CloseUpstreamAuth

	CloseInternal // a panic in a callback (the engine's recoverConn logs it with its stack)
	CloseDrained  // U4: the engine stops and nothing is owed (the engine's drain logs the summary)

	numCloseCauses
)

// closeLine is one cause's log line and metric label.
type closeLine struct {
	name string // the cause, for tests and debugging
	// msg is the log line; "" when the line is written where the cause is
	// decided (its details are known only there).
	msg     string
	level   slog.Level
	refused bool   // before authentication: the rate-limited refusal line (O2)
	cause   string // logged first as "cause"
	// callCause: the call site passes "cause" (it is known only there).
	callCause bool
	// metric: the cause label of flexway_kafka_connections_closed_total,
	// normal closures only (seed 001: never mixed with refusals); "" is not
	// counted.
	metric string
	// transient: the cause is the gateway's or its broker's, not the
	// client's: a connection that had no answer past the handshake yet is
	// reset (RST), not closed in order. franz-go takes an orderly close
	// before its first answer for a misconfigured listener (ErrFirstReadEOF:
	// "is TLS missing?", "is SASL missing?") and fails every record it
	// buffers, where it retries a reset. Such a socket holds nothing a reset
	// could drop. A refusal keeps its orderly close: there the hint is right.
	transient bool
}

const (
	connRefused  = "kafka connection refused"
	authRefused  = "kafka authentication refused"
	loggedByCall = "" // the call site logs: its line depends on what only it knows (authentication refusals, a TLS read error but a close_notify, recoverConn's stack)
)

var closeCauses = [numCloseCauses]closeLine{
	CloseTLSOnPlaintext:   {name: "tls on plaintext port", msg: connRefused, refused: true, cause: "a TLS client on a plaintext port"},
	ClosePreAuthTooLarge:  {name: "max_request_bytes before authentication", msg: connRefused, refused: true, cause: "request larger than allowed before authentication"},
	ClosePreAuthMalformed: {name: "malformed before authentication", msg: connRefused, refused: true, cause: "malformed request before authentication"},
	CloseSASLOrder:        {name: "sasl order", msg: connRefused, refused: true, cause: "SaslAuthenticate before SaslHandshake"},
	CloseUnauthenticated:  {name: "unauthenticated request", msg: connRefused, refused: true, cause: "request before authentication"},
	CloseAuthFailed:       {name: "authentication", msg: loggedByCall},
	CloseAuthTimeout:      {name: "auth_timeout", metric: "auth_timeout"},
	CloseHelloTooLarge:    {name: "tls hello too large", msg: connRefused, refused: true, cause: "ClientHello too large"},
	CloseBadHello:         {name: "tls hello", msg: connRefused, refused: true, callCause: true}, // not TLS, or no SNI
	CloseUnknownSNI:       {name: "sni", msg: connRefused, refused: true, cause: "SNI names no declared cluster"},
	CloseHandshakePool:    {name: "tls pool", msg: connRefused, refused: true, cause: "handshake pool full"},
	CloseHandshake:        {name: "tls handshake", msg: connRefused, refused: true, cause: "TLS handshake failed"},
	CloseCertUnknown:      {name: "mtls", msg: authRefused, refused: true, callCause: true}, // auth.MatchCert's
	CloseSameCluster:      {name: "same physical cluster", msg: loggedByCall},

	CloseTooLarge:         {name: "max_request_bytes", msg: "kafka connection closed: request larger than max_request_bytes", level: slog.LevelWarn},
	CloseOverBudget:       {name: "max_in_flight_bytes", msg: "kafka connection closed: request larger than max_in_flight_bytes", level: slog.LevelWarn},
	CloseMalformed:        {name: "malformed", msg: "kafka connection closed: malformed or unknown request", level: slog.LevelWarn},
	CloseRefusedAPI:       {name: "refused api", msg: "kafka connection closed: request refused", level: slog.LevelWarn},
	CloseTenantShare:      {name: "tenant share", msg: "kafka connection closed: the tenant's in-flight share is reached", level: slog.LevelWarn},
	CloseRevoked:          {name: "revoked", msg: "kafka connection closed: credential revoked on reload", level: slog.LevelWarn},
	CloseClusterRemoved:   {name: "cluster removed", msg: connRefused, refused: true, cause: "the virtual cluster is no longer declared"}, // seed 002's troubleshooting row "undeclared cluster"
	CloseSessionEnded:     {name: "max_session_lifetime", msg: "kafka connection closed: session ended without re-authentication", level: slog.LevelInfo, metric: "max_session_lifetime"},
	CloseCertSessionEnded: {name: "certificate session ended", msg: "kafka connection closed: session ended", level: slog.LevelInfo, metric: "max_session_lifetime"},
	CloseReauthMechanism:  {name: "reauth mechanism", msg: "kafka connection closed: re-authentication with another mechanism or framing", level: slog.LevelWarn},
	CloseReauthMalformed:  {name: "reauth malformed", msg: "kafka connection closed: malformed re-authentication", level: slog.LevelWarn},
	CloseReauthRefused:    {name: "reauth refused", msg: loggedByCall},
	ClosePartialFrame:     {name: "partial frame", msg: "kafka connection closed: a request not completed within idle_timeout", level: slog.LevelWarn, metric: "idle_timeout"},
	CloseIdle:             {name: "idle_timeout", metric: "idle_timeout"},
	CloseWriteTimeout:     {name: "write timeout", msg: "kafka connection closed: the client does not read its answers", level: slog.LevelWarn},
	CloseTLSRead:          {name: "tls read", msg: loggedByCall},

	CloseUnknownBroker:    {name: "unknown broker", msg: "kafka connection closed: the broker of this port is unknown to the upstream", level: slog.LevelWarn, transient: true},
	CloseDialFailed:       {name: "upstream dial", msg: "kafka connection closed: broker unreachable", level: slog.LevelWarn, transient: true},
	CloseDialFailedAgain:  {name: "upstream dial again", transient: true},
	CloseAnswerTooLarge:   {name: "max_response_bytes", msg: "kafka connection closed: broker answer larger than max_response_bytes", level: slog.LevelWarn},
	CloseAnswerOutOfOrder: {name: "answer out of order", msg: "kafka connection closed: broker answer out of order", level: slog.LevelWarn},
	CloseAnswerMalformed:  {name: "malformed answer", msg: "kafka connection closed: malformed broker answer", level: slog.LevelWarn},
	CloseBrokerClosed:     {name: "upstream closed", msg: "kafka connection closed: broker connection ended", level: slog.LevelInfo, transient: true},
	CloseUpstreamAuth:     {name: "upstream authentication", msg: "kafka upstream authentication failed", level: slog.LevelError, transient: true},

	CloseInternal: {name: "internal error", msg: loggedByCall},
	CloseDrained:  {name: "shutdown", msg: loggedByCall, transient: true},
}

func (c CloseCause) String() string { return closeCauses[c].name }

// Transient reports whether the cause is the gateway's or its broker's,
// not the client's: a connection closed for it before its first answer
// is reset (closeLine.transient, invariant 43).
func (c CloseCause) Transient() bool { return closeCauses[c].transient }

// Closing logs and counts one closure of a connection whose series are ts
// (its tenant label; nil: none known): the cause's line on log with attrs
// (key, value pairs, after its own "cause" if it has one), a refusal
// before authentication through refused (the rate-limited line, O2), and
// its metric.
func (s *Set) Closing(log *slog.Logger, refused *RateLimiter, why CloseCause, ts *TenantSeries, attrs []any) {
	c := &closeCauses[why]
	s.Closed(why, ts)
	if c.msg == "" {
		return
	}
	if c.cause != "" {
		attrs = append([]any{"cause", c.cause}, attrs...)
	}
	if c.refused {
		refused.Line(log, slog.LevelWarn, c.msg, attrs...)
		return
	}
	log.Log(context.Background(), c.level, c.msg, attrs...)
}
