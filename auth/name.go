package auth

import "unicode/utf8"

// A name a client sends before it is known (the PLAIN user, a token's
// subject, a SASL mechanism) is written to the logs and the audit trail
// bounded (issue 33.3): at most MaxNameBytes of it, cut at a UTF-8
// boundary and marked with CutMark, so that an anonymous peer cannot make
// one line as large as its request (64 KiB before authentication).
const (
	MaxNameBytes = 256
	CutMark      = "…(cut)"
)

// BoundName is name as the gateway writes it: whole up to MaxNameBytes,
// otherwise its first MaxNameBytes at most (never half a character)
// followed by CutMark. The result never holds on to name's memory.
func BoundName(name string) string {
	if len(name) <= MaxNameBytes {
		return name
	}
	i := MaxNameBytes
	for j := i; j > MaxNameBytes-utf8.UTFMax; j-- {
		if utf8.RuneStart(name[j]) {
			i = j // a character starts here: cut before it
			break
		}
	}
	return name[:i] + CutMark
}
