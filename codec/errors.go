package codec

import "errors"

var (
	// ErrCodecShort: the bytes end before the structure does.
	ErrCodecShort = errors.New("codec: truncated message")
	// ErrCodecUnknownKey: an API key that kmsg does not know.
	ErrCodecUnknownKey = errors.New("codec: unknown API key")
	// ErrCodecVersion: a version the gateway does not parse for this API.
	ErrCodecVersion = errors.New("codec: unsupported version")
	// ErrCodecTooLong: a name, once mapped, is longer than Kafka allows.
	ErrCodecTooLong = errors.New("codec: name too long")
	// ErrCodecTrailing: bytes left after the structure (a malformed or hostile frame).
	ErrCodecTrailing = errors.New("codec: trailing bytes")
)
