package configs

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The API-key store (SPEC I1). Its format is ours, the seeds do not show it:
//
//	keys:
//	  - id: acme-orders-producer
//	    hash: "sha256:<64 hex digits of SHA-256 of the key>"
//	    tenant: acme
//	    operations: [produceOrders]
//	    expires_at: 2027-06-30T00:00:00Z   # optional, RFC 3339
//
// It holds hashes only: a key is a random, high-entropy string, so one SHA-256
// suffices (no salt nor stretching: there is no dictionary to guess from), and
// the store can be read by whoever deploys without giving a key away.

type keyStore struct {
	Keys []keyEntry `yaml:"keys"`
}

type keyEntry struct {
	ID         string   `yaml:"id"`
	Hash       string   `yaml:"hash"`
	Tenant     string   `yaml:"tenant"`
	Operations []string `yaml:"operations"`
	ExpiresAt  string   `yaml:"expires_at"`
}

const hashPrefix = "sha256:"

// HashKey is the hash the store holds for key. Compare hashes with
// crypto/subtle.ConstantTimeCompare.
func HashKey(key string) [32]byte { return sha256.Sum256([]byte(key)) }

// Expired reports whether the key is past its expires_at at now (a key
// without one never expires). Safe for concurrent use.
func (k *APIKey) Expired(now time.Time) bool {
	return !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt)
}

// keyIDProblem says why id cannot be a key's id ("" if it can). The id is the
// SASL PLAIN user name: no NUL (PLAIN's separator), nothing invisible.
func keyIDProblem(id string) string {
	switch {
	case id == "":
		return "required: the key's id, the SASL PLAIN user name"
	case len(id) > 255:
		return "longer than 255 characters"
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] >= 0x7f {
			return fmt.Sprintf("%q holds a space or a character that is not visible ASCII", id)
		}
	}
	return ""
}

func (l *loader) loadKeyStore() {
	ak := l.f.Auth.APIKeys
	l.keys = map[string]*APIKey{}
	if ak == nil {
		return
	}
	ref, ok := strings.CutPrefix(ak.Store, "file:")
	if !ok || ref == "" {
		return // reported by checkAuth
	}
	name := filepath.Clean(l.resolve(ref))
	l.storeName = name
	data, err := readConfigFile(name)
	if err != nil {
		l.cfg.errorf(path{"auth", "api_keys", "store"}, "cannot read %s: %s", name, unwrapPathError(err))
		return
	}
	if l.files != nil {
		l.files.Write(data)
	}
	d, ok := parseDoc(name, data, &l.r)
	if !ok {
		return
	}
	if d.body == nil {
		// A store truncated by a deployment must not pass for one without
		// keys: that one says so.
		l.r.errs = append(l.r.errs, FieldError{File: name, Msg: "empty: a store without keys is written keys: []"})
		return
	}
	l.store = d
	var s keyStore
	d.decode(&s, true)
	for i, e := range s.Keys {
		p := path{"keys", i}
		k := &APIKey{ID: e.ID, Tenant: e.Tenant, Operations: e.Operations}
		// The tenant is not checked: an identity whose tenant is not
		// letters, digits and '-' is refused at authentication (SPEC I4),
		// and the rest of the store stays usable.
		if msg := keyIDProblem(e.ID); msg != "" {
			d.errorf(p.at("id"), "%s", msg)
		} else if l.keys[e.ID] != nil {
			d.errorf(p.at("id"), "%q names another key too", e.ID)
		}
		if h, err := parseHash(e.Hash); err != nil {
			d.errorf(p.at("hash"), "%v", err)
		} else {
			k.Hash = h
		}
		if e.ExpiresAt != "" {
			t, err := time.Parse(time.RFC3339, e.ExpiresAt)
			if err != nil {
				d.errorf(p.at("expires_at"), "%q is not an RFC 3339 time, e.g. 2027-06-30T00:00:00Z", e.ExpiresAt)
			}
			k.ExpiresAt = t
		}
		l.checkIdentityOperations(d, p.at("operations"), e.Operations)
		if e.ID != "" && l.keys[e.ID] == nil {
			l.keys[e.ID] = k
		}
	}
}

// checkIdentityOperations checks the operations an identity (a key, a
// certificate) is bound to: at least one, each served to Kafka clients.
// Whether an operation admits that kind of identity is judged at
// authentication, not here: the seeds bind a certificate to consumeOrders,
// whose alternatives are a key and a token.
func (l *loader) checkIdentityOperations(d *doc, p path, ops []string) {
	if len(ops) == 0 {
		d.errorf(p, "required: the operations it opens")
		return
	}
	if !l.contractOK {
		return // the contract's own errors say enough
	}
	for j, id := range ops {
		if l.ops[id] == nil {
			d.errorf(p.at(j), "unknown operation %q: the contract serves %s to Kafka clients", id, listOrNone(sortedKeys(l.ops)))
		}
	}
}

func parseHash(s string) ([32]byte, error) {
	var h [32]byte
	hexPart, ok := strings.CutPrefix(s, hashPrefix)
	// The value is not echoed: a key pasted here by mistake must not reach a log.
	if !ok || len(hexPart) != 64 {
		return h, errors.New("\"sha256:\" followed by 64 hex digits expected (the hash of the key, never the key)")
	}
	if _, err := hex.Decode(h[:], []byte(hexPart)); err != nil {
		return h, errors.New("\"sha256:\" followed by 64 hex digits expected (the hash of the key, never the key)")
	}
	return h, nil
}

// ---- flexway keys new ----

// ParseExpiry reads a key's lifetime: "90d" (days) or a Go duration ("720h").
func ParseExpiry(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days <= 0 || days > 100*366 {
			return 0, fmt.Errorf("%q: a positive number of days expected, e.g. 90d", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q: a lifetime like 90d or 720h expected", s)
	}
	return d, nil
}

// KeyBytes is the size of a generated key's randomness.
const KeyBytes = 32

// NewKeyEntry makes a fresh random key (32 bytes from crypto/rand, hex) and
// the store entry that admits it, ready to paste under "keys:". expires 0
// means no expiry. The key is returned once and kept nowhere.
func NewKeyEntry(id, tenant string, ops []string, expires time.Duration) (key string, entryYAML string, err error) {
	return newKeyEntry(rand.Reader, time.Now(), id, tenant, ops, expires)
}

func newKeyEntry(random io.Reader, now time.Time, id, tenant string, ops []string, expires time.Duration) (string, string, error) {
	if msg := keyIDProblem(id); msg != "" {
		return "", "", fmt.Errorf("--id: %s", msg)
	}
	// The store would load a tenant of another form, but authentication would
	// refuse every client of it (SPEC I4): say so before a key is handed out.
	if !ValidTenant(tenant) {
		return "", "", fmt.Errorf("--tenant %q: letters, digits and '-' only", tenant)
	}
	if len(ops) == 0 {
		return "", "", errors.New("--operations: at least one operation")
	}
	for _, op := range ops {
		if op == "" {
			return "", "", errors.New("--operations: an empty operation name")
		}
	}
	if expires < 0 {
		return "", "", errors.New("--expires: a lifetime is positive")
	}
	var raw [KeyBytes]byte
	if _, err := io.ReadFull(random, raw[:]); err != nil {
		return "", "", fmt.Errorf("reading randomness: %w", err)
	}
	key := hex.EncodeToString(raw[:])
	h := HashKey(key)

	var b strings.Builder
	fmt.Fprintf(&b, "  - id: %s\n", yamlScalar(id))
	fmt.Fprintf(&b, "    hash: \"%s%s\"\n", hashPrefix, hex.EncodeToString(h[:]))
	fmt.Fprintf(&b, "    tenant: %s\n", yamlScalar(tenant))
	quoted := make([]string, len(ops))
	for i, op := range ops {
		quoted[i] = yamlScalar(op)
	}
	fmt.Fprintf(&b, "    operations: [%s]\n", strings.Join(quoted, ", "))
	if expires > 0 {
		fmt.Fprintf(&b, "    expires_at: %s\n", now.Add(expires).UTC().Truncate(time.Second).Format(time.RFC3339))
	}
	return key, b.String(), nil
}

// ValidTenant reports whether a tenant is written in letters, digits and '-'
// (SPEC I4): no '.', which ends the tenant in a physical name, no '_', which
// Kafka confuses with '.'.
func ValidTenant(t string) bool {
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// yamlScalar writes s plain when YAML reads it back as the same string, and
// double-quoted otherwise.
func yamlScalar(s string) string {
	plain := s != ""
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || (i > 0 && (c == '-' || c == '_' || c == '.'))
	}
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "null", "y", "n":
		plain = false
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		plain = false
	}
	if plain {
		return s
	}
	return strconv.Quote(s)
}
