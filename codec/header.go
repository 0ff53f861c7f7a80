package codec

import (
	"github.com/twmb/franz-go/pkg/kbin"
)

// RequestHeader is a parsed request header. ClientID aliases the frame.
type RequestHeader struct {
	Key         int16
	Version     int16
	Correlation int32
	ClientID    []byte
	ClientNull  bool
	Flexible    bool
	// BodyOffset is where the request body starts in the frame.
	BodyOffset int
}

// ParseRequestHeader parses the header at the start of frame (the bytes
// after the size prefix). It allocates nothing. For an API key that kmsg
// does not know, it returns the key, version and correlation id with
// ErrCodecUnknownKey, so that the caller can log and disconnect.
func ParseRequestHeader(frame []byte) (RequestHeader, error) {
	var h RequestHeader
	if len(frame) < 8 {
		return h, ErrCodecShort
	}
	r := kbin.Reader{Src: frame}
	h.Key = r.Int16()
	h.Version = r.Int16()
	h.Correlation = r.Int32()
	if !Known(h.Key) {
		return h, ErrCodecUnknownKey
	}
	if h.Version < 0 || h.Version > maxVersion[h.Key] {
		// A version newer than kmsg knows: its layout is unknown to us,
		// but the header up to the client id is the same for all versions.
		h.Flexible = false
	} else {
		h.Flexible = RequestFlexible(h.Key, h.Version)
	}
	l := r.Int16()
	switch {
	case l < -1:
		return h, ErrCodecShort
	case l == -1:
		h.ClientNull = true
	default:
		h.ClientID = r.Span(int(l))
	}
	if h.Flexible {
		skipTags(&r)
	}
	if !r.Ok() {
		return h, ErrCodecShort
	}
	h.BodyOffset = len(frame) - len(r.Src)
	return h, nil
}

// AppendRequestHeader appends a request header; the tag section, if any, is
// written empty: unknown tagged fields of the client never reach a broker.
func AppendRequestHeader(dst []byte, key, version int16, corr int32, clientID []byte, clientNull, flexible bool) []byte {
	dst = kbin.AppendInt16(dst, key)
	dst = kbin.AppendInt16(dst, version)
	dst = kbin.AppendInt32(dst, corr)
	if clientNull {
		dst = kbin.AppendInt16(dst, -1)
	} else {
		dst = kbin.AppendInt16(dst, int16(len(clientID)))
		dst = append(dst, clientID...)
	}
	if flexible {
		dst = append(dst, 0)
	}
	return dst
}

// AppendResponseHeader appends a response header for key and version.
func AppendResponseHeader(dst []byte, key, version int16, corr int32) []byte {
	dst = kbin.AppendInt32(dst, corr)
	if ResponseHeaderFlexible(key, version) {
		dst = append(dst, 0)
	}
	return dst
}

// ParseResponseHeader returns the correlation id and the body of a response
// frame (after the size prefix) of the given key and version.
func ParseResponseHeader(frame []byte, key, version int16) (int32, []byte, error) {
	r := kbin.Reader{Src: frame}
	corr := r.Int32()
	if ResponseHeaderFlexible(key, version) {
		skipTags(&r)
	}
	if !r.Ok() {
		return 0, nil, ErrCodecShort
	}
	return corr, r.Src, nil
}

// ResponseCorrelation reads only the correlation id of a response frame.
func ResponseCorrelation(frame []byte) (int32, bool) {
	if len(frame) < 4 {
		return 0, false
	}
	r := kbin.Reader{Src: frame}
	return r.Int32(), true
}

// skipTags skips a tag section.
func skipTags(r *kbin.Reader) {
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Ok(); i++ {
		r.Uvarint()
		l := r.Uvarint()
		r.Span(int(l))
	}
}
