package signals

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/flexway/flexway/auth"
)

// RefusalsPerSecond bounds the refusal lines written before
// authentication (O2): an anonymous flood cannot flood the logs.
const RefusalsPerSecond = 10

// RateLimiter bounds a kind of log line to so many a second; the lines it
// drops are counted on the next line it lets through (lines_dropped).
type RateLimiter struct {
	mu        sync.Mutex
	perSecond int
	second    int64
	n         int
	dropped   int
}

// NewRateLimiter lets perSecond lines through each second.
func NewRateLimiter(perSecond int) *RateLimiter { return &RateLimiter{perSecond: perSecond} }

// Allow reports whether a line may be written now and, when it may, how
// many were dropped in the last second that had lines.
func (r *RateLimiter) Allow() (ok bool, dropped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := time.Now().Unix()
	if s != r.second {
		dropped = r.dropped
		r.second, r.n, r.dropped = s, 0, 0
	}
	if r.n >= r.perSecond {
		r.dropped++
		return false, 0
	}
	r.n++
	return true, dropped
}

// Line writes msg at level on log with args (key, value pairs) if r allows
// it, adding "lines_dropped" when lines were dropped before it. A string
// value is written bounded (auth.BoundName): these lines are an anonymous
// peer's (a user, a mechanism, an SNI name it sent), and each must stay
// small (issue 33.3).
func (r *RateLimiter) Line(log *slog.Logger, level slog.Level, msg string, args ...any) {
	ok, dropped := r.Allow()
	if !ok {
		return
	}
	if dropped > 0 {
		args = append(args, "lines_dropped", dropped)
	}
	log.LogAttrs(context.Background(), level, msg, argsToAttrs(args)...)
}

func argsToAttrs(args []any) []slog.Attr {
	var out []slog.Attr
	for i := 0; i+1 < len(args); i += 2 {
		k, _ := args[i].(string)
		if s, ok := args[i+1].(string); ok {
			out = append(out, slog.String(k, auth.BoundName(s)))
			continue
		}
		out = append(out, slog.Any(k, args[i+1]))
	}
	return out
}
