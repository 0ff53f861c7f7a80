package auth

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Issue 33.3: a name a client sends is written bounded: whole up to
// MaxNameBytes, otherwise cut at a character boundary and marked.
func TestBoundName(t *testing.T) {
	whole := strings.Repeat("u", MaxNameBytes)
	if BoundName(whole) != whole || BoundName("acme-app") != "acme-app" {
		t.Fatal("a name within the bound is changed")
	}
	long := strings.Repeat("u", 60<<10)
	if got := BoundName(long); got != whole+CutMark {
		t.Fatalf("60 KiB of u: %d bytes, want %d then %q", len(got), MaxNameBytes, CutMark)
	}
	// "é" is two bytes: 255 bytes of "u" then "é" straddles the bound.
	straddle := strings.Repeat("u", MaxNameBytes-1) + strings.Repeat("é", 10)
	got := BoundName(straddle)
	if !utf8.ValidString(got) || got != strings.Repeat("u", MaxNameBytes-1)+CutMark {
		t.Fatalf("cut inside a character: %q", got[MaxNameBytes-4:])
	}
	for _, s := range []string{strings.Repeat("日本", 100), strings.Repeat("\xff", 300), strings.Repeat("😀", 70)} {
		got := BoundName(s)
		if !strings.HasSuffix(got, CutMark) || len(got) > MaxNameBytes+len(CutMark) || (utf8.ValidString(s) && !utf8.ValidString(got)) {
			t.Errorf("%q...: %q", s[:8], got)
		}
	}
}

// VerifyPlain's user, refused, is bounded (the log and the audit write it).
func TestVerifyPlainUserBounded(t *testing.T) {
	user := strings.Repeat("u", 60<<10)
	res := VerifyPlain(keySnap(t0), plain("", user, "wrong"), t0)
	if res.ID != nil || res.User != BoundName(user) {
		t.Fatalf("a 60 KiB user: %d bytes kept", len(res.User))
	}
}
