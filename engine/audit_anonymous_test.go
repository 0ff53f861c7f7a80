package engine

import (
	"log/slog"
	"testing"
	"time"
)

// Issue 33.3 (O3): a request whose header does not parse is audited under
// the operation "malformed", never as Produce (the key 0 an unread header
// holds); one whose header parsed and body did not, under its API.
func TestAuditMalformedHeaderSaysSo(t *testing.T) {
	logs := &jsonLines{}
	env := newTestEnv(t, "", WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	withAudit(t, env, "refusals")
	for _, frame := range [][]byte{
		{0, 0, 0, 6, 0, 0, 0, 0, 0, 1},                    // 6 bytes: shorter than a header
		{0, 0, 0, 10, 0x03, 0xe7, 0, 0, 0, 0, 0, 1, 0, 0}, // key 999: no API
	} {
		r := dialPlain(t, env.boot)
		r.writeRaw(frame)
		r.closedWithoutAnswer(3 * time.Second)
	}
	r := dialPlain(t, env.boot)
	r.writeRaw(apiVersionsFrame(0, 1, []byte{0, 0, 0, 1})) // v0, bytes after the header
	r.closedWithoutAnswer(3 * time.Second)

	waitUntil(t, 10*time.Second, "three malformed requests audited", func() bool {
		n := 0
		for _, a := range logs.audits(t) {
			if a.Code == "unsupported" {
				n++
			}
		}
		return n == 3
	})
	ops := map[string]int{}
	for _, a := range logs.audits(t) {
		ops[a.Operation]++
		if a.Decision != "refused" || a.Host != "shop" || a.Principal != "" {
			t.Errorf("%+v: want refused on shop, no principal", a)
		}
	}
	if ops["malformed"] != 2 || ops["ApiVersions"] != 1 || ops["Produce"] != 0 {
		t.Fatalf("operations audited: %v; want malformed twice, ApiVersions once, never Produce", ops)
	}
}
