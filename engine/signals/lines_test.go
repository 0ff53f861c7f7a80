package signals

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// untilNextSecond sleeps into the next wall-clock second (the limiter's
// window) and a little past its start.
func untilNextSecond() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second + 10*time.Millisecond).Sub(now))
}

// O2: at most RefusalsPerSecond refusal lines a second; the next line let
// through says how many were dropped.
func TestRefusalLinesRateLimited(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	lim := NewRateLimiter(RefusalsPerSecond)
	untilNextSecond()
	for i := 0; i < RefusalsPerSecond+5; i++ {
		lim.Line(log, slog.LevelWarn, "kafka connection refused", "bound", "max_connections_per_ip")
	}
	if n := strings.Count(buf.String(), "\n"); n != RefusalsPerSecond {
		t.Fatalf("%d lines in a second, want %d:\n%s", n, RefusalsPerSecond, buf.String())
	}
	if !strings.Contains(buf.String(), `level=WARN msg="kafka connection refused" bound=max_connections_per_ip`+"\n") {
		t.Fatalf("log: %s", buf.String())
	}
	buf.Reset()
	untilNextSecond()
	lim.Line(log, slog.LevelWarn, "kafka connection refused", "bound", "max_connections_per_ip")
	if !strings.Contains(buf.String(), `msg="kafka connection refused" bound=max_connections_per_ip lines_dropped=5`+"\n") {
		t.Fatalf("log: %s", buf.String())
	}
}

// Issue 33.3: a rate-limited line's strings are bounded: a 60 KiB user
// name is written cut and marked, the line stays small.
func TestRefusalLineStringsBounded(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	user := strings.Repeat("u", 60<<10)
	NewRateLimiter(RefusalsPerSecond).Line(log, slog.LevelWarn, "kafka authentication refused", "user", user, "port", 9092)
	out := buf.String()
	if !strings.Contains(out, `"user":"`+strings.Repeat("u", 256)+`…(cut)"`) || !strings.Contains(out, `"port":9092`) || len(out) > 1024 {
		t.Fatalf("%d bytes: %.400s", len(out), out)
	}
}
