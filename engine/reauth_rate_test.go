package engine

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// I6, B1 (issue 34.6): a re-authentication takes no
// max_connection_rate_per_tenant token. At a rate of 2, in one UTC second:
// a connection authenticates (one token) and re-authenticates three times
// (none), a second connection authenticates (the second token), a third
// is refused (the bound is there). A burst that a stalled machine spread
// over two seconds proves nothing and is tried again in a later second.
func TestReauthTakesNoConnectionRateToken(t *testing.T) {
	env := newTestEnv(t, "    max_connection_rate_per_tenant: 2\n")
	for try := 1; ; try++ {
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
		first := time.Now().Unix()
		a := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
		for i := 0; i < 3; i++ {
			a.saslPlain("acme-app", env.keys["acme-app"])
			if code := a.authAnswer().ErrorCode; code != 0 {
				t.Fatalf("re-authentication %d refused: %d", i+1, code)
			}
		}
		codes := make([]int16, 2)
		for i := range codes {
			c := dialPlain(t, env.boot)
			c.saslPlain("acme-app", env.keys["acme-app"])
			codes[i] = c.authAnswer().ErrorCode
		}
		if time.Now().Unix() != first {
			if try == 10 {
				t.Fatal("no burst within one second in 10 tries")
			}
			t.Logf("try %d: the burst spread over two seconds, again", try)
			continue
		}
		if codes[0] != 0 {
			t.Fatalf("the second new connection of the second refused (%d): a re-authentication took a token", codes[0])
		}
		if codes[1] != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("the third new connection of the second answered %d, want SASL_AUTHENTICATION_FAILED", codes[1])
		}
		return
	}
}
