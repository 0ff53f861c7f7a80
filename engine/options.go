package engine

import (
	"log/slog"
	"net"
	"time"

	"github.com/flexway/flexway/engine/session"
	"github.com/flexway/flexway/quota"
)

// Options tune the engine beyond flexway.yaml; tests use them, production
// keeps the defaults.
type Options struct {
	Logger *slog.Logger
	// WriteTimeout closes a client that reads none of its answers for that
	// long (B3). The seeds fix it at 30 s; tests shorten it.
	WriteTimeout time.Duration
	// Loops is the number of event loops (default: defaultLoops, one
	// fewer than GOMAXPROCS).
	Loops int
	// ReadBufferCap is each loop's read buffer, gnet's read of a socket
	// (default 16 KiB: a large Produce's records stay in the socket to be
	// spliced); ReadOnCap is the loop's read-on buffer, what an owner reads
	// on from the socket in one call where gnet's read left a frame
	// incomplete and no splice takes it (default 256 KiB; 0: none, and
	// gnet's read is then the only one). engine/conn/readon.go.
	ReadBufferCap, ReadOnCap int
	// AuthWorkers bounds the authentication pool (default 64).
	AuthWorkers int
	// SessionLifetime, if set, caps max_session_lifetime (tests).
	SessionLifetime time.Duration
	// Counters, if set, is the shared counter store instead of the one
	// server.counters names (tests); the engine does not close it.
	Counters quota.Store
	// Listen, if set, gives the listener ports instead of binding them
	// (handover.go: the sockets a handover passed on).
	Listen func(network, addr string) (*net.TCPListener, error)
	// FlowHigh and FlowLow are every connection's write queue marks
	// (engine/session/flow.go; default 1 MiB and 256 KiB).
	FlowHigh, FlowLow int
	// StreamMin: a Fetch answer or a Produce request longer than this that
	// is not whole in the buffer is relayed as it arrives (invariants 21,
	// 26; default codec.MaxStreamUnit).
	StreamMin int
	// FetchSpliceMin and ProduceSpliceMin: a partition with fewer record
	// bytes left to come is relayed through the loop's buffer, not spliced
	// (default 64 KiB each; 0 turns splicing off).
	FetchSpliceMin, ProduceSpliceMin int
	// lockLoops locks each event loop to its OS thread (gnet's
	// WithLockOSThread): the system-call measurement counts a loop's
	// thread (syscalls_test.go).
	lockLoops bool
}

// WithFlowMarks sets the write queues' marks.
func WithFlowMarks(high, low int) Option {
	return func(o *Options) { o.FlowHigh, o.FlowLow = high, min(low, high) }
}

// WithSpliceMin sets the splice passes' bounds (0: off).
func WithSpliceMin(fetch, produce int) Option {
	return func(o *Options) { o.FetchSpliceMin, o.ProduceSpliceMin = fetch, produce }
}

// tune sets the sessions' bounds (session.Tuning) from the options.
func (o *Options) tune(t *session.Tuning) {
	t.FlowHigh.Store(int64(o.FlowHigh))
	t.FlowLow.Store(int64(o.FlowLow))
	t.StreamMin.Store(int64(o.StreamMin))
	t.FetchSpliceMin.Store(int64(o.FetchSpliceMin))
	t.ProduceSpliceMin.Store(int64(o.ProduceSpliceMin))
	t.RoomBound.Store(true)
	t.ReadFirst, t.ReadOn = ceilPow2(o.ReadBufferCap), o.ReadOnCap
}

// ceilPow2 is gnet's read buffer for a ReadBufferCap of n: the next power
// of two.
func ceilPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// Option sets an option.
type Option func(*Options)

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(o *Options) { o.Logger = l } }

// WithWriteTimeout sets the delay after which a client that reads nothing is closed.
func WithWriteTimeout(d time.Duration) Option { return func(o *Options) { o.WriteTimeout = d } }

// WithLoops sets the number of event loops.
func WithLoops(n int) Option { return func(o *Options) { o.Loops = n } }

// WithReadBufferCap sets the loops' read buffer size.
func WithReadBufferCap(n int) Option { return func(o *Options) { o.ReadBufferCap = n } }

// WithReadOnCap sets the loops' read-on buffer size (0: no reading on).
func WithReadOnCap(n int) Option { return func(o *Options) { o.ReadOnCap = n } }

// WithSessionLifetime caps every session's lifetime below
// max_session_lifetime (whose floor is 1m): tests of KIP-368 use it.
func WithSessionLifetime(d time.Duration) Option { return func(o *Options) { o.SessionLifetime = d } }

// WithCounters gives the engine its shared counter store (tests: a store
// they hold, on a Redis they started).
func WithCounters(s quota.Store) Option { return func(o *Options) { o.Counters = s } }

// defaultLoops is the number of event loops for procs Ps: one fewer, and
// at least one (invariant 37). A loop spends its idle time in epoll_wait,
// a system call that keeps its P; while no P is idle, Go's sysmon takes
// such a P back within 20 µs and hands it to a spinning thread, then wakes
// every 20 µs to do it again, and the loop's return from the call must
// find a P anew: futex and nanosleep calls and a thread switch for every
// time a loop waits. With one P left idle, sysmon leaves a P in a system
// call for 10 ms, and what runs off the loops (authentication, the splice
// sessions, the reclaimer, the admin endpoint) has a P without preempting
// a loop.
func defaultLoops(procs int) int { return max(1, procs-1) }
