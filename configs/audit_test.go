package configs

import (
	"strings"
	"testing"
)

// TestAuditLoads: audit (O3) is off when absent; written, decisions
// defaults to refusals and the topic key is read from its file (trailing
// newline trimmed); a short key is refused without being echoed.
func TestAuditLoads(t *testing.T) {
	f := base().apply(t, edit{"flexway", "version: 1\n", "version: 1\naudit: { topic_key: \"file:./audit-topic.key\" }\n"})
	f.extra = map[string]string{"audit-topic.key": "0123456789abcdef0123\n"}
	s, errs := f.load(t)
	if errs != "" {
		t.Fatal(errs)
	}
	if a := s.File.Audit; a == nil || a.Decisions != "refusals" || a.TopicKey.Value() != "0123456789abcdef0123" {
		t.Errorf("audit = %#v, want decisions refusals and the file's key", a)
	}

	f = base().apply(t, edit{"flexway", "version: 1\n", "version: 1\naudit: { decisions: all, topic_key: \"file:./audit-topic.key\" }\n"})
	f.extra = map[string]string{"audit-topic.key": "sh0rt-s3cr3t\n"}
	_, errs = f.load(t)
	if !strings.Contains(errs, "audit.topic_key: 12 bytes: 16 at least") || strings.Contains(errs, "sh0rt-s3cr3t") {
		t.Errorf("report %q: want the short key refused, never echoed", errs)
	}
}

// TestAuditSeedFormLoads: the seed writes audit: { decisions: … } alone; it
// loads, and the topics' key is derived from the configuration as read: the
// same for the same files, another when flexway.yaml changes.
func TestAuditSeedFormLoads(t *testing.T) {
	keyOf := func(extra string) string {
		f := base().apply(t, edit{"flexway", "version: 1\n", "version: 1\naudit: { decisions: all }\n" + extra})
		s, errs := f.load(t)
		if errs != "" {
			t.Fatal(errs)
		}
		k := s.File.Audit.TopicKey.Value()
		if len(k) < MinAuditTopicKey {
			t.Fatalf("derived key %d bytes, want %d at least", len(k), MinAuditTopicKey)
		}
		return k
	}
	a, b, c := keyOf(""), keyOf(""), keyOf("# another file\n")
	if a != b {
		t.Error("the same files gave two keys")
	}
	if a == c {
		t.Error("another flexway.yaml gave the same key")
	}
}
