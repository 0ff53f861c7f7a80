package configs

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

// TestHashKey: the store's hash is SHA-256 of the key's bytes (SPEC I1).
func TestHashKey(t *testing.T) {
	h := HashKey("test-key")
	if got := "sha256:" + hex.EncodeToString(h[:]); got != testKeyHash {
		t.Errorf("HashKey = %s, want %s", got, testKeyHash)
	}
}

// TestAPIKeyExpired: expires_at is the first instant the key is refused (SPEC I1).
func TestAPIKeyExpired(t *testing.T) {
	at := time.Date(2027, 6, 30, 0, 0, 0, 0, time.UTC)
	k := &APIKey{ExpiresAt: at}
	if k.Expired(at.Add(-time.Nanosecond)) {
		t.Error("expired before expires_at")
	}
	if !k.Expired(at) || !k.Expired(at.Add(time.Hour)) {
		t.Error("not expired at or after expires_at")
	}
	if (&APIKey{}).Expired(time.Now().AddDate(100, 0, 0)) {
		t.Error("a key without expires_at expired")
	}
}

// TestNewKeyEntry: `flexway keys new` makes a random key and an entry that,
// pasted into a store, loads and admits that key (SPEC I1).
func TestNewKeyEntry(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	random := bytes.NewReader(bytes.Repeat([]byte{0xab}, KeyBytes))
	key, entry, err := newKeyEntry(random, now, "acme-app", "acme", []string{"produceOrders", "consumeOrders"}, 90*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if key != strings.Repeat("ab", KeyBytes) {
		t.Errorf("key = %q", key)
	}
	if strings.Contains(entry, key) {
		t.Error("the entry holds the key itself")
	}
	if !strings.Contains(entry, "expires_at: 2026-04-02T03:04:05Z") {
		t.Errorf("entry without the expected expiry:\n%s", entry)
	}
	s, errs := base().apply(t, edit{"keys", "keys:\n", "keys:\n" + entry}).load(t)
	if errs != "" {
		t.Fatalf("the entry does not load:\n%s\n%s", entry, errs)
	}
	k := s.Keys["acme-app"]
	if k == nil || k.Hash != HashKey(key) || k.Tenant != "acme" || len(k.Operations) != 2 || !k.ExpiresAt.Equal(now.Add(90*24*time.Hour)) {
		t.Errorf("loaded %+v", k)
	}

	// Two calls never give the same key (crypto/rand).
	k1, _, _ := NewKeyEntry("a", "acme", []string{"x"}, 0)
	k2, e2, _ := NewKeyEntry("a", "acme", []string{"x"}, 0)
	if k1 == k2 || len(k1) != 2*KeyBytes {
		t.Errorf("keys %q %q", k1, k2)
	}
	if strings.Contains(e2, "expires_at") {
		t.Error("an entry without --expires has expires_at")
	}

	for _, bad := range []struct {
		id, tenant string
		ops        []string
		want       string
	}{
		{"", "acme", []string{"x"}, "--id"},
		{"has space", "acme", []string{"x"}, "--id"},
		{"a", "acme_corp", []string{"x"}, "--tenant"},
		{"a", "", []string{"x"}, "--tenant"},
		{"a", "acme", nil, "--operations"},
		{"a", "acme", []string{""}, "--operations"},
	} {
		if _, _, err := NewKeyEntry(bad.id, bad.tenant, bad.ops, 0); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("NewKeyEntry(%q, %q, %q) = %v, want an error about %s", bad.id, bad.tenant, bad.ops, err, bad.want)
		}
	}
}

// TestNewKeyEntryQuotes: names YAML would read as something else are quoted.
func TestNewKeyEntryQuotes(t *testing.T) {
	_, entry, err := NewKeyEntry("key:1", "no", []string{"true", "op#1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`id: "key:1"`, `tenant: "no"`, `operations: ["true", "op#1"]`} {
		if !strings.Contains(entry, w) {
			t.Errorf("missing %s in:\n%s", w, entry)
		}
	}
}

func TestParseExpiry(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"90d": 90 * 24 * time.Hour, "1d": 24 * time.Hour, "720h": 720 * time.Hour, "30m": 30 * time.Minute,
	} {
		if got, err := ParseExpiry(in); err != nil || got != want {
			t.Errorf("ParseExpiry(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0d", "-1d", "xd", "90", "-5h", "0s"} {
		if _, err := ParseExpiry(in); err == nil {
			t.Errorf("ParseExpiry(%q) accepted", in)
		}
	}
}

func TestValidTenant(t *testing.T) {
	for s, want := range map[string]bool{"acme": true, "Acme-2": true, "": false, "acme.eu": false, "acme_eu": false, "acmé": false} {
		if ValidTenant(s) != want {
			t.Errorf("ValidTenant(%q) = %v", s, !want)
		}
	}
}
