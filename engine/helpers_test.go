package engine

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

func plainAuth(user, pass string) sasl.Mechanism {
	return plain.Auth{User: user, Pass: pass}.AsMechanism()
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// waitUntil polls cond until it holds, or fails the test after d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gnet's warning of an event queued for a socket the read pause took is
// not a warning of ours (it is dropped, nothing lost); its other warnings are.
func TestGnetLoggerStaleEventIsDebug(t *testing.T) {
	var out strings.Builder
	g := gnetLogger{slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	g.Warnf("received event[fd=%d|ev=%d|flags=%d] of a stale connection from event-loop(%d)", 25, 25, 0, 0)
	g.Warnf("something else: %d", 1)
	text := out.String()
	if !strings.Contains(text, "level=DEBUG msg=\"received event[fd=25") {
		t.Errorf("the stale event not at DEBUG:\n%s", text)
	}
	if !strings.Contains(text, "level=WARN msg=\"something else: 1\"") {
		t.Errorf("another warning not at WARN:\n%s", text)
	}
}
