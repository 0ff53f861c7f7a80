package main

import (
	"bytes"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
)

// TestRunKeysNew: `flexway keys new` prints a key and the store entry that
// admits it (SPEC I1).
func TestRunKeysNew(t *testing.T) {
	var out, errb bytes.Buffer
	code := runKeys([]string{"new", "--id", "acme-billing", "--tenant", "acme", "--operations", "produceOrders, consumeOrders", "--expires", "90d"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	keyLine := regexp.MustCompile(`(?m)^([0-9a-f]{64})$`).FindStringSubmatch(out.String())
	if keyLine == nil {
		t.Fatalf("no key line in:\n%s", out.String())
	}
	h := configs.HashKey(keyLine[1])
	for _, w := range []string{
		"  - id: acme-billing\n",
		`    hash: "sha256:` + hex.EncodeToString(h[:]) + `"`,
		"    tenant: acme\n",
		"    operations: [produceOrders, consumeOrders]\n",
		"    expires_at: " + time.Now().Add(90*24*time.Hour).UTC().Format("2006-01-02"),
	} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("missing %q in:\n%s", w, out.String())
		}
	}
	if strings.Count(out.String(), keyLine[1]) != 1 {
		t.Error("the key is printed more than once")
	}
}

// TestRunKeysNewChecksConfig: with --config, the operations must be served.
func TestRunKeysNewChecksConfig(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"new", "--id", "a", "--tenant", "acme", "--operations", "produceOrders", "--config", "../../configs/quickstart/flexway.yaml"}
	if code := runKeys(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	args[6] = "produceOrder"
	if code := runKeys(args, &out, &errb); code != 1 || !strings.Contains(errb.String(), `"produceOrder" is not served`) || out.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

func TestRunKeysUsage(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"old"},
		{"new", "--tenant", "acme", "--operations", "x"},
		{"new", "--id", "a", "--tenant", "acme_eu", "--operations", "x"},
		{"new", "--id", "a", "--tenant", "acme"},
		{"new", "--id", "a", "--tenant", "acme", "--operations", "x", "--expires", "soon"},
		{"new", "--id", "a", "--tenant", "acme", "--operations", "x", "extra"},
		{"new", "--bogus"},
	} {
		var out, errb bytes.Buffer
		if code := runKeys(args, &out, &errb); code != 2 || out.Len() != 0 || errb.Len() == 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
}
