package signals

import (
	"github.com/flexway/flexway/audit"
	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/decide"
)

// RefusalCause is the seed's cause of a request decide refused, whole or
// in part: code is the Kafka error of its first refused part (0 when none
// says), text the cause decide gave an answer it built whole. The one
// mapping of the signals and the audit trail (O1, O3).
func RefusalCause(key int16, out decide.Outcome, code int16, text string) Cause {
	switch {
	case out == decide.Disconnect:
		if audit.IsAdmin(key) {
			return CauseAdminAPI
		}
		return CauseUnsupported // never announced, a version not announced, unreadable
	case code != 0:
		return CauseOfCode(key, code)
	}
	return CauseOfText(key, text)
}

// CauseOfCode maps the Kafka error code the gateway answered a refused
// request (or a part of it) with to the seed's cause label.
func CauseOfCode(key int16, code int16) Cause {
	switch code {
	case 3, 100: // UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID
		return CauseUnknownTopic
	case 29, 30, 31, 53: // TOPIC_, GROUP_, CLUSTER_, TRANSACTIONAL_ID_AUTHORIZATION_FAILED
		if audit.IsAdmin(key) {
			return CauseAdminAPI // administration without the operation's admin_scope
		}
		return CauseACL
	case 37, 39, 40, 42: // INVALID_PARTITIONS, INVALID_REPLICA_ASSIGNMENT, INVALID_CONFIG, INVALID_REQUEST
		if audit.IsAdmin(key) {
			return CauseAdminAPI
		}
		return CauseUnsupported
	case 35: // UNSUPPORTED_VERSION
		return CauseUnsupported
	case 44: // POLICY_VIOLATION: a Produce past the tenant's day/month quota; else bounded administration
		if key == codec.KeyProduce {
			return CauseQuota
		}
		return CauseAdminAPI
	case 58: // SASL_AUTHENTICATION_FAILED
		return CauseAuthentication
	}
	if audit.IsAdmin(key) {
		return CauseAdminAPI
	}
	return CauseACL
}

// textCodes: the broker-style cause texts CauseOfText reads, by prefix.
var textCodes = [...]struct {
	prefix string
	code   int16
}{{"UNKNOWN_TOPIC_OR_PARTITION", 3}, {"TOPIC_AUTHORIZATION_FAILED", 29}, {"GROUP_AUTHORIZATION_FAILED", 30},
	{"CLUSTER_AUTHORIZATION_FAILED", 31}, {"TRANSACTIONAL_ID_AUTHORIZATION_FAILED", 53}, {"POLICY_VIOLATION", 44},
	{"UNSUPPORTED_VERSION", 35}}

// CauseOfText reads a cause label from a broker-style cause text (the
// Pending's Cause of an answer the gateway built whole).
func CauseOfText(key int16, text string) Cause {
	for _, c := range textCodes {
		if len(text) >= len(c.prefix) && text[:len(c.prefix)] == c.prefix {
			return CauseOfCode(key, c.code)
		}
	}
	if audit.IsAdmin(key) {
		return CauseAdminAPI
	}
	return CauseUnsupported
}
