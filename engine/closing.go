package engine

import (
	"context"
	"log/slog"
)

// closeCause is why the gateway closes a client connection. Its log line
// and its metric label come from one table, closeCauses: client.close logs
// the line (with the attributes the call site knows) and counts the label.
type closeCause uint8

const (
	// Before authentication (the rate-limited refusal line, O2).
	closeTLSOnPlaintext closeCause = iota
	closePreAuthTooLarge
	closePreAuthMalformed
	closeSASLOrder
	closeUnauthenticated
	closeAuthFailed
	closeAuthTimeout
	closeHelloTooLarge
	closeBadHello
	closeUnknownSNI
	closeHandshakePool
	closeHandshake
	closeCertUnknown
	closeSameCluster // U3: logged by refusedCluster (samecluster.go)

	// An authenticated session.
	closeTooLarge
	closeMalformed
	closeRefusedAPI
	closeTenantShare
	closeRevoked
	closeSessionEnded
	closeCertSessionEnded
	closeReauthMechanism
	closeReauthMalformed
	closeReauthRefused
	closePartialFrame
	closeIdle
	closeWriteTimeout
	closeTLSRead

	// The broker side.
	closeUnknownBroker
	closeDialFailed
	closeAnswerTooLarge
	closeAnswerOutOfOrder
	closeAnswerMalformed
	closeBrokerClosed
	closeUpstreamAuth

	closeInternal // a panic in a callback (recoverConn logs it with its stack)
	closeDrained  // U4: the engine stops and nothing is owed (drain.go logs the summary)

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
	closeTLSOnPlaintext:   {name: "tls on plaintext port", msg: connRefused, refused: true, cause: "a TLS client on a plaintext port"},
	closePreAuthTooLarge:  {name: "max_request_bytes before authentication", msg: connRefused, refused: true, cause: "request larger than allowed before authentication"},
	closePreAuthMalformed: {name: "malformed before authentication", msg: connRefused, refused: true, cause: "malformed request before authentication"},
	closeSASLOrder:        {name: "sasl order", msg: connRefused, refused: true, cause: "SaslAuthenticate before SaslHandshake"},
	closeUnauthenticated:  {name: "unauthenticated request", msg: connRefused, refused: true, cause: "request before authentication"},
	closeAuthFailed:       {name: "authentication", msg: loggedByCall},
	closeAuthTimeout:      {name: "auth_timeout", metric: "auth_timeout"},
	closeHelloTooLarge:    {name: "tls hello too large", msg: connRefused, refused: true, cause: "ClientHello too large"},
	closeBadHello:         {name: "tls hello", msg: connRefused, refused: true, callCause: true}, // not TLS, or no SNI
	closeUnknownSNI:       {name: "sni", msg: connRefused, refused: true, cause: "SNI names no declared cluster"},
	closeHandshakePool:    {name: "tls pool", msg: connRefused, refused: true, cause: "handshake pool full"},
	closeHandshake:        {name: "tls handshake", msg: connRefused, refused: true, cause: "TLS handshake failed"},
	closeCertUnknown:      {name: "mtls", msg: authRefused, refused: true, callCause: true}, // auth.MatchCert's
	closeSameCluster:      {name: "same physical cluster", msg: loggedByCall},

	closeTooLarge:         {name: "max_request_bytes", msg: "kafka connection closed: request larger than max_request_bytes", level: slog.LevelWarn},
	closeMalformed:        {name: "malformed", msg: "kafka connection closed: malformed or unknown request", level: slog.LevelWarn},
	closeRefusedAPI:       {name: "refused api", msg: "kafka connection closed: request refused", level: slog.LevelWarn},
	closeTenantShare:      {name: "tenant share", msg: "kafka connection closed: the tenant's in-flight share is reached", level: slog.LevelWarn},
	closeRevoked:          {name: "revoked", msg: "kafka connection closed: credential revoked on reload", level: slog.LevelWarn},
	closeSessionEnded:     {name: "max_session_lifetime", msg: "kafka connection closed: session ended without re-authentication", level: slog.LevelInfo, metric: "max_session_lifetime"},
	closeCertSessionEnded: {name: "certificate session ended", msg: "kafka connection closed: session ended", level: slog.LevelInfo, metric: "max_session_lifetime"},
	closeReauthMechanism:  {name: "reauth mechanism", msg: "kafka connection closed: re-authentication with another mechanism or framing", level: slog.LevelWarn},
	closeReauthMalformed:  {name: "reauth malformed", msg: "kafka connection closed: malformed re-authentication", level: slog.LevelWarn},
	closeReauthRefused:    {name: "reauth refused", msg: loggedByCall},
	closePartialFrame:     {name: "partial frame", msg: "kafka connection closed: a request not completed within idle_timeout", level: slog.LevelWarn, metric: "idle_timeout"},
	closeIdle:             {name: "idle_timeout", metric: "idle_timeout"},
	closeWriteTimeout:     {name: "write timeout", msg: "kafka connection closed: the client does not read its answers", level: slog.LevelWarn},
	closeTLSRead:          {name: "tls read", msg: loggedByCall},

	closeUnknownBroker:    {name: "unknown broker", msg: "kafka connection closed: the broker of this port is unknown to the upstream", level: slog.LevelWarn, transient: true},
	closeDialFailed:       {name: "upstream dial", msg: "kafka connection closed: broker unreachable", level: slog.LevelWarn, transient: true},
	closeAnswerTooLarge:   {name: "max_response_bytes", msg: "kafka connection closed: broker answer larger than max_response_bytes", level: slog.LevelWarn},
	closeAnswerOutOfOrder: {name: "answer out of order", msg: "kafka connection closed: broker answer out of order", level: slog.LevelWarn},
	closeAnswerMalformed:  {name: "malformed answer", msg: "kafka connection closed: malformed broker answer", level: slog.LevelWarn},
	closeBrokerClosed:     {name: "upstream closed", msg: "kafka connection closed: broker connection ended", level: slog.LevelInfo, transient: true},
	closeUpstreamAuth:     {name: "upstream authentication", msg: "kafka upstream authentication failed", level: slog.LevelError, transient: true},

	closeInternal: {name: "internal error", msg: loggedByCall},
	closeDrained:  {name: "shutdown", msg: loggedByCall, transient: true},
}

func (c closeCause) String() string { return closeCauses[c].name }

// closing logs and counts one closure: the cause's line with attrs (key,
// value pairs, after its own "cause" if it has one) and its metric.
func (e *Engine) closing(why closeCause, attrs []any) { e.closingFor(why, nil, attrs) }

// closingFor is closing for a connection whose series are ts (its tenant
// label; nil: none known).
func (e *Engine) closingFor(why closeCause, ts *tenantSeries, attrs []any) {
	c := &closeCauses[why]
	e.m.closed(why, ts)
	if c.msg == "" {
		return
	}
	if c.cause != "" {
		attrs = append([]any{"cause", c.cause}, attrs...)
	}
	if c.refused {
		e.refusedLine(c.msg, attrs...)
		return
	}
	e.log.Log(context.Background(), c.level, c.msg, attrs...)
}
