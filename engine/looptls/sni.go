package looptls

// The server name of a ClientHello, read on the loop before any worker is
// spent (L1). These are the first bytes of anyone who can open a TCP
// connection: every length is read through cryptobyte, nothing is copied
// unless the hello spans records, and FuzzParseSNI holds the invariants.
//
// The caller (onTLSHello) peeks at most configs.UnauthenticatedMaxRequestBytes and calls
// again at each read until the answer is not ErrHelloIncomplete, so an
// incomplete hello must cost little: the record headers are walked (a
// bounded number of them) before anything is copied or parsed.

import (
	"errors"

	"golang.org/x/crypto/cryptobyte"
)

// Why a ClientHello cannot be routed.
var (
	ErrHelloIncomplete = errors.New("incomplete") // more bytes are needed
	ErrNotTLS          = errors.New("not a TLS handshake")
	ErrNoSNI           = errors.New("no SNI")
)

const (
	recordHeaderLen     = 5
	recordTypeHandshake = 0x16
	// maxRecordFragment is the largest fragment crypto/tls reads (RFC 8446
	// 5.2: 2^14 plus an expansion allowance).
	maxRecordFragment = 1<<14 + 2048
	// maxHelloLen is crypto/tls's bound on one handshake message.
	maxHelloLen      = 1 << 16
	handshakeHeadLen = 4 // type, uint24 length
	typeClientHello  = 1
	extServerName    = 0 // RFC 6066 3
	nameTypeHostName = 0
	maxHostNameLen   = 253
	maxHostLabelLen  = 63
	// maxHelloRecords bounds the records one hello may span: any hello fits
	// in five (64 KiB in fragments of 16 KiB); a hello cut into hundreds of
	// tiny records would make each call walk them all again.
	maxHelloRecords = 16
)

// ParseSNI reads the server name of the ClientHello at the start of b (one
// or more TLS handshake records). Bytes after the hello are ignored.
// ErrHelloIncomplete: more bytes are needed; ErrNotTLS: b does not start
// with a well-formed ClientHello; ErrNoSNI: the hello names no host (no
// server_name extension, or a name that is not a host name).
func ParseSNI(b []byte) (string, error) {
	msg, err := clientHello(b)
	if err != nil {
		return "", err
	}
	return helloServerName(msg)
}

// clientHello returns the body of the ClientHello message (after its
// 4-byte header) gathered from the handshake records at the start of b:
// a sub-slice of b when one record holds it, else a copy.
func clientHello(b []byte) ([]byte, error) {
	var (
		head  [handshakeHeadLen]byte // the message's first bytes, across records
		nhead int
		have  int // fragment bytes seen
		need  = -1
		s     = cryptobyte.String(b)
		frags int
		first []byte
	)
	for {
		if len(s) < recordHeaderLen {
			return nil, ErrHelloIncomplete
		}
		var typ, major, minor uint8
		var frag []byte
		s.ReadUint8(&typ)
		s.ReadUint8(&major)
		s.ReadUint8(&minor)
		if typ != recordTypeHandshake || major != 3 {
			return nil, ErrNotTLS
		}
		var l uint16
		s.ReadUint16(&l)
		if l == 0 || int(l) > maxRecordFragment {
			return nil, ErrNotTLS
		}
		if !s.ReadBytes(&frag, int(l)) {
			return nil, ErrHelloIncomplete
		}
		frags++
		if frags == 1 {
			first = frag
		}
		for i := 0; nhead < handshakeHeadLen && i < len(frag); i++ {
			head[nhead] = frag[i]
			nhead++
		}
		have += len(frag)
		if need < 0 && nhead == handshakeHeadLen {
			if head[0] != typeClientHello {
				return nil, ErrNotTLS
			}
			hl := int(head[1])<<16 | int(head[2])<<8 | int(head[3])
			if hl > maxHelloLen {
				return nil, ErrNotTLS
			}
			need = handshakeHeadLen + hl
		}
		if need >= 0 && have >= need {
			break
		}
		if frags == maxHelloRecords {
			return nil, ErrNotTLS
		}
	}
	if len(first) >= need {
		return first[handshakeHeadLen:need:need], nil
	}
	// Spread over records: gather the fragments (all present, checked above).
	msg := make([]byte, 0, need)
	s = cryptobyte.String(b)
	for len(msg) < need {
		var frag cryptobyte.String
		s.Skip(3)
		s.ReadUint16LengthPrefixed(&frag)
		msg = append(msg, frag[:min(len(frag), need-len(msg))]...)
	}
	return msg[handshakeHeadLen:], nil
}

// helloServerName reads the host name of a ClientHello body, checked as
// crypto/tls checks it (RFC 6066 3): one server_name extension, a non-empty
// list, at most one host_name, not empty; the extensions fill the hello.
func helloServerName(msg []byte) (string, error) {
	s := cryptobyte.String(msg)
	var sessionID, suites, compression, exts cryptobyte.String
	if !s.Skip(2+32) || // legacy_version, random
		!s.ReadUint8LengthPrefixed(&sessionID) ||
		!s.ReadUint16LengthPrefixed(&suites) || len(suites)%2 != 0 ||
		!s.ReadUint8LengthPrefixed(&compression) {
		return "", ErrNotTLS
	}
	if s.Empty() { // a hello without extensions (before TLS 1.2)
		return "", ErrNoSNI
	}
	if !s.ReadUint16LengthPrefixed(&exts) || !s.Empty() {
		return "", ErrNotTLS
	}
	var name []byte
	seen := false
	for !exts.Empty() {
		var typ uint16
		var data cryptobyte.String
		if !exts.ReadUint16(&typ) || !exts.ReadUint16LengthPrefixed(&data) {
			return "", ErrNotTLS
		}
		if typ != extServerName {
			continue
		}
		if seen {
			return "", ErrNotTLS
		}
		seen = true
		var list cryptobyte.String
		if !data.ReadUint16LengthPrefixed(&list) || list.Empty() || !data.Empty() {
			return "", ErrNotTLS
		}
		for !list.Empty() {
			var nameType uint8
			var host cryptobyte.String
			if !list.ReadUint8(&nameType) || !list.ReadUint16LengthPrefixed(&host) || host.Empty() {
				return "", ErrNotTLS
			}
			if nameType != nameTypeHostName {
				continue
			}
			if name != nil {
				return "", ErrNotTLS
			}
			name = host
		}
	}
	if name == nil || !isHostName(name) {
		return "", ErrNoSNI
	}
	return string(name), nil
}

// isHostName: labels of 1 to 63 letters, digits, '-' or '_', at most 253
// bytes, no trailing dot (RFC 6066 forbids it; clients strip it).
func isHostName(b []byte) bool {
	if len(b) == 0 || len(b) > maxHostNameLen {
		return false
	}
	label := 0
	for _, c := range b {
		switch {
		case c == '.':
			if label == 0 {
				return false
			}
			label = 0
			continue
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
		label++
		if label > maxHostLabelLen {
			return false
		}
	}
	return label > 0
}
