package counters

import (
	"log/slog"
	"time"

	"github.com/flexway/flexway/quota"
)

// Local is the quota.Store of a replica alone (no server.counters): the same
// counters, never shared. A goroutine empties the finished windows every
// second (so that a window's tag is never read for another's, see
// counter.go).
type Local struct{ r *Redis }

var _ quota.Store = (*Local)(nil)

// NewLocal returns a Local store; Close stops its goroutine.
func NewLocal() *Local {
	r := newStore(DefaultSync, slog.Default(), time.Now)
	go r.run()
	return &Local{r}
}

// Counter implements quota.Store.
func (l *Local) Counter(name string, window quota.Window) quota.Counter {
	return l.r.Counter(name, window)
}

// Close implements quota.Store.
func (l *Local) Close() error { return l.r.Close() }
