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

	closeInternal // a panic in a callback (recoverConn logs it with its stack)

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
	// metric: the cause label of flexway_kafka_connections_closed_total,
	// normal closures only (seed 001: never mixed with refusals); "" is not
	// counted.
	metric string
}

const (
	connRefused  = "kafka connection refused"
	authRefused  = "kafka authentication refused"
	loggedByCall = "" // the call site logs (auth.go, tls.go, the dial, recoverConn)
)

var closeCauses = [numCloseCauses]closeLine{
	closeTLSOnPlaintext:   {name: "tls on plaintext port", msg: connRefused, refused: true, cause: "a TLS client on a plaintext port"},
	closePreAuthTooLarge:  {name: "max_request_bytes before authentication", msg: connRefused, refused: true, cause: "request larger than allowed before authentication"},
	closePreAuthMalformed: {name: "malformed before authentication", msg: connRefused, refused: true, cause: "malformed request before authentication"},
	closeSASLOrder:        {name: "sasl order", msg: loggedByCall},
	closeUnauthenticated:  {name: "unauthenticated request", msg: loggedByCall},
	closeAuthFailed:       {name: "authentication", msg: loggedByCall},
	closeAuthTimeout:      {name: "auth_timeout", metric: "auth_timeout"},
	closeHelloTooLarge:    {name: "tls hello too large", msg: loggedByCall},
	closeBadHello:         {name: "tls hello", msg: loggedByCall},
	closeUnknownSNI:       {name: "sni", msg: loggedByCall},
	closeHandshakePool:    {name: "tls pool", msg: loggedByCall},
	closeHandshake:        {name: "tls handshake", msg: loggedByCall},
	closeCertUnknown:      {name: "mtls", msg: loggedByCall},

	closeTooLarge:         {name: "max_request_bytes", msg: "kafka connection closed: request larger than max_request_bytes", level: slog.LevelWarn},
	closeMalformed:        {name: "malformed", msg: "kafka connection closed: malformed or unknown request", level: slog.LevelWarn},
	closeRefusedAPI:       {name: "refused api", msg: "kafka connection closed: request refused", level: slog.LevelWarn},
	closeTenantShare:      {name: "tenant share", msg: "kafka connection closed: the tenant's in-flight share is reached", level: slog.LevelWarn},
	closeRevoked:          {name: "revoked", msg: loggedByCall},
	closeSessionEnded:     {name: "max_session_lifetime", msg: loggedByCall, metric: "max_session_lifetime"},
	closeCertSessionEnded: {name: "certificate session ended", msg: "kafka connection closed: session ended", level: slog.LevelInfo, metric: "max_session_lifetime"},
	closeReauthMechanism:  {name: "reauth mechanism", msg: loggedByCall},
	closeReauthMalformed:  {name: "reauth malformed", msg: loggedByCall},
	closeReauthRefused:    {name: "reauth refused", msg: loggedByCall},
	closePartialFrame:     {name: "partial frame", msg: "kafka connection closed: a request not completed within idle_timeout", level: slog.LevelWarn, metric: "idle_timeout"},
	closeIdle:             {name: "idle_timeout", metric: "idle_timeout"},
	closeWriteTimeout:     {name: "write timeout", msg: "kafka connection closed: the client does not read its answers", level: slog.LevelWarn},
	closeTLSRead:          {name: "tls read", msg: loggedByCall},

	closeUnknownBroker:    {name: "unknown broker", msg: loggedByCall},
	closeDialFailed:       {name: "upstream dial", msg: loggedByCall},
	closeAnswerTooLarge:   {name: "max_response_bytes", msg: "kafka connection closed: broker answer larger than max_response_bytes", level: slog.LevelWarn},
	closeAnswerOutOfOrder: {name: "answer out of order", msg: "kafka connection closed: broker answer out of order", level: slog.LevelWarn},
	closeAnswerMalformed:  {name: "malformed answer", msg: "kafka connection closed: malformed broker answer", level: slog.LevelWarn},
	closeBrokerClosed:     {name: "upstream closed", msg: "kafka connection closed: broker connection ended", level: slog.LevelInfo},

	closeInternal: {name: "internal error", msg: loggedByCall},
}

func (c closeCause) String() string { return closeCauses[c].name }

// closing logs and counts one closure: the cause's line with attrs (key,
// value pairs, after its own "cause" if it has one) and its metric.
func (e *Engine) closing(why closeCause, attrs []any) {
	c := &closeCauses[why]
	e.m.closed(why)
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
