// Package counters is the shared counter store of server.counters (issue 8
// item 4, SPEC Q3): quota.Store over a real Redis, and Local, the store of a
// replica alone.
//
// A replica decides alone: a Counter's Add and Total are atomics on this
// replica's memory. One goroutine reconciles every `sync`: in one pipeline,
// it adds each day or month counter's unsent delta to the window's key
// (INCRBY, then EXPIREAT a little after the window's end) and reads back
// the total, from which it learns what the other replicas spent; a Running
// counter (a rate bucket's) is one hash, learned whatever the second
// (running.go). Redis unreachable: the
// replica keeps deciding on what it knows, logs once a minute, and sends
// the deltas it kept when Redis is back. The store is one Redis, a primary
// Redis Sentinel names (followed through a failover, said once), or a
// Redis Cluster (storeurl, client.go).
package counters

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flexway/flexway/quota"
	"github.com/flexway/flexway/quota/counters/storeurl"
	"github.com/redis/go-redis/v9"
)

// DefaultSync is the reconciliation's period when none is given (the
// configuration's default, configs.DefaultCountersSync: the seeds name
// `sync` without a default).
const DefaultSync = time.Second

// downLogEvery bounds the log of an unreachable store: a line a minute.
const downLogEvery = time.Minute

// Redis is a quota.Store shared through a Redis.
type Redis struct {
	cl   redis.UniversalClient // nil: Local (the reconciliation only empties finished windows)
	host string                // the store's host:port, socket path or hosts for the logs: never the URL
	sync time.Duration
	log  *slog.Logger
	now  func() time.Time

	mu     sync.Mutex // Counter and the reconciliation's list; never Add or Total
	byName map[counterKey]*counter
	all    []*counter // append-only

	// The reconciliation's own (one goroutine).
	pending  map[string]pendingDelta // finished day/month windows' deltas Redis has not taken
	epochID  string                  // this store's part of the Running hashes' epochs (running.go)
	epochSeq uint64                  // one epoch proposed per sync
	down     bool                    // an unreachable line said, no reachable line since
	lastDown time.Time               // the last unreachable line
	atPrim   string                  // the Sentinel-named primary of the last good sync ("": none)
	scripted bool                    // the store took putClock whole: sent by its SHA1 since (running.go)

	primary atomic.Pointer[string] // a Sentinel's: the last connection's address (client.go's primaryHook)

	kick      chan struct{} // a Running counter made: its first read at once (running.go)
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

type counterKey struct {
	name   string
	window quota.Window
}

type pendingDelta struct {
	delta  int64
	expire time.Time // the key's end: past it, the delta is dropped
}

var _ quota.Store = (*Redis)(nil)

var quietOnce sync.Once

// discard silences go-redis's own logger (connection pool notices): the
// store logs its state itself, once a minute at most.
type discard struct{}

func (discard) Printf(context.Context, string, ...any) {}

// Open returns the store at rawURL, in one of the forms storeurl reads (one
// Redis, a primary Sentinel names, a Cluster), reconciled every sync
// (DefaultSync if 0 or less). Its error wraps ErrStoreURL and never holds
// the URL. It does not wait for Redis: a store that is not there yet is
// one that is unreachable (local counts, a line a minute, reconciled when
// it comes).
func Open(rawURL string, sync time.Duration, log *slog.Logger) (*Redis, error) {
	return open(rawURL, sync, log, time.Now)
}

func open(rawURL string, sync time.Duration, log *slog.Logger, now func() time.Time) (*Redis, error) {
	st, err := storeurl.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	quietOnce.Do(func() { redis.SetLogger(discard{}) })
	if sync <= 0 {
		sync = DefaultSync
	}
	r := newStore(sync, log, now)
	r.cl = newClient(st, &r.primary)
	r.host = st.Host
	go r.run()
	return r, nil
}

func newStore(sync time.Duration, log *slog.Logger, now func() time.Time) *Redis {
	if log == nil {
		log = slog.Default()
	}
	return &Redis{
		sync:    sync,
		log:     log,
		now:     now,
		byName:  map[counterKey]*counter{},
		pending: map[string]pendingDelta{},
		epochID: newEpochBase(),
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
}

// Counter implements quota.Store.
func (r *Redis) Counter(name string, window quota.Window) quota.Counter {
	k := counterKey{name, window}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.byName[k]
	if c == nil {
		c = &counter{name: name, window: window}
		if window == quota.Running {
			c.run = &running{}
		}
		if r.cl == nil {
			c.ready.Store(true) // alone: nothing to learn
		} else {
			// Its first read now: what the others spent (a day's or a
			// month's count before this replica started), and what they
			// spend from now on (Running), is learned at once.
			select {
			case r.kick <- struct{}{}:
			default:
			}
		}
		for i := range c.slots {
			c.slots[i].sentWin = -1
		}
		r.byName[k] = c
		r.all = append(r.all, c)
	}
	return c
}

// Close implements quota.Store: a last reconciliation (2 s at most), then
// the connections close. It may be called more than once.
func (r *Redis) Close() error {
	r.closeOnce.Do(func() { close(r.stop) })
	<-r.done
	return nil
}

// Host is the store's host:port, socket path, or hosts (a Sentinel's
// with /master): what the logs name, never a password.
func (r *Redis) Host() string { return r.host }

func (r *Redis) run() {
	defer close(r.done)
	t := time.NewTicker(r.sync)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			r.reconcile(min(max(r.sync, time.Second), 5*time.Second))
		case <-r.kick:
			r.reconcile(min(max(r.sync, time.Second), 5*time.Second))
		case <-r.stop:
			r.reconcile(2 * time.Second)
			if r.cl != nil {
				r.cl.Close()
			}
			return
		}
	}
}

// op is one counter window's part of a reconciliation's pipeline.
type op struct {
	c     *counter
	s     *slot
	w     int64
	snap  uint64 // the slot's word when read
	local int64  // the count it held: what Redis holds once incr succeeds
	delta int64
	incr  *redis.IntCmd
	get   *redis.StringCmd
}

// round is one reconciliation's pipeline and what it read.
type round struct {
	ctx   context.Context
	pipe  redis.Pipeliner
	now   time.Time
	ops   []op
	runs  []runOp
	pends []pendOp
	err   error // the first failure: Redis unreachable, or refusing
}

// pendOp is a pending delta's INCRBY in a round.
type pendOp struct {
	key  string
	incr *redis.IntCmd
}

func (rd *round) fail(e error) {
	if rd.err == nil {
		rd.err = e
	}
}

// reconcile is one sync: every counter's windows, and the pending deltas,
// in one pipeline.
func (r *Redis) reconcile(timeout time.Duration) {
	now := r.now()
	r.mu.Lock()
	list := r.all
	r.mu.Unlock()
	if r.cl == nil {
		forgetFinished(list, now)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	rd := &round{ctx: ctx, pipe: r.cl.Pipeline(), now: now}
	r.epochSeq++
	epoch := r.epochID + "." + strconv.FormatUint(r.epochSeq, 36)
	for _, c := range list {
		if c.window == quota.Running {
			rd.runs = append(rd.runs, queueRunning(ctx, rd.pipe, c, epoch, runningTTL(r.sync), now, r.scripted))
			continue
		}
		rd.queueWindows(c)
	}
	r.queuePending(rd)
	var ping *redis.StatusCmd
	if len(rd.ops) == 0 && len(rd.pends) == 0 && len(rd.runs) == 0 {
		// Nothing counted yet: a PING, so that a store unreachable from
		// the start is said at once, not at the first request.
		ping = rd.pipe.Ping(ctx)
	}
	rd.pipe.Exec(ctx) // each command's error is read below
	if ping != nil && ping.Err() != nil {
		rd.fail(ping.Err())
	}
	for _, o := range rd.ops {
		r.settleWindow(rd, o)
	}
	ran, missing := false, false
	for i := range rd.runs {
		if rerr := rd.runs[i].settle(now, runningStale(r.sync)); rerr != nil {
			rd.fail(rerr)
		}
		switch rd.runs[i].script() {
		case scriptRan:
			ran = true
		case scriptMissing:
			missing = true // one node without it (a Cluster's): whole to all next time
		}
	}
	if missing || ran {
		r.scripted = !missing
	}
	for _, c := range list {
		c.ready.Store(true) // read once, or tried: decided on from now
	}
	for _, p := range rd.pends {
		if perr := p.incr.Err(); perr == nil {
			delete(r.pending, p.key)
		} else {
			rd.fail(perr)
		}
	}
	r.logState(rd.err, now)
}

// forgetFinished is Local's reconciliation: the finished windows' counts
// are forgotten.
func forgetFinished(list []*counter, now time.Time) {
	for _, c := range list {
		cw := windowOf(c.window, now)
		for i := range c.slots {
			s := &c.slots[i]
			if v := s.local.Load(); v != 0 && windowOfTag(v>>tagShift, cw) < cw {
				s.local.CompareAndSwap(v, 0)
			}
		}
	}
}

// queueWindows queues a day or month counter's windows: the unsent delta
// of each (INCRBY, EXPIREAT), else a read of the current one's total.
func (rd *round) queueWindows(c *counter) {
	cw := windowOf(c.window, rd.now)
	current := false
	for i := range c.slots {
		s := &c.slots[i]
		v := s.local.Load()
		if v == 0 {
			continue
		}
		w := windowOfTag(v>>tagShift, cw)
		if s.sentWin != w {
			s.sentWin, s.sent = w, 0
		}
		o := op{c: c, s: s, w: w, snap: v, local: int64(v & countMask)}
		o.delta = o.local - s.sent
		key := windowKey(c.name, c.window, w)
		switch {
		case o.delta > 0:
			o.incr = rd.pipe.IncrBy(rd.ctx, key, o.delta)
			rd.pipe.ExpireAt(rd.ctx, key, windowEnd(c.window, w).Add(keyGrace(c.window)))
		case w >= cw:
			o.get = rd.pipe.Get(rd.ctx, key)
		default: // finished and all sent
			if s.local.CompareAndSwap(v, 0) {
				s.sentWin, s.sent = -1, 0
			}
			continue
		}
		if w == cw {
			current = true
		}
		rd.ops = append(rd.ops, o)
	}
	if !current { // nothing spent here in this window: what the others spent
		rd.ops = append(rd.ops, op{c: c, s: &c.slots[cw&1], w: cw, get: rd.pipe.Get(rd.ctx, windowKey(c.name, c.window, cw))})
	}
}

// queuePending queues the finished windows' deltas Redis has not taken
// yet, and drops those whose key would have expired.
func (r *Redis) queuePending(rd *round) {
	for key, p := range r.pending {
		if !rd.now.Before(p.expire) {
			delete(r.pending, key)
			continue
		}
		rd.pends = append(rd.pends, pendOp{key, rd.pipe.IncrBy(rd.ctx, key, p.delta)})
		rd.pipe.ExpireAt(rd.ctx, key, p.expire)
	}
}

// settleWindow reads one window's answer: what the others spent (a read
// or an INCRBY's total), or a failure, after which a finished window's
// delta waits in pending.
func (r *Redis) settleWindow(rd *round, o op) {
	s := o.s
	cw := windowOf(o.c.window, rd.now)
	if o.get != nil {
		total, gerr := o.get.Int64()
		if gerr != nil && !errors.Is(gerr, redis.Nil) {
			rd.fail(gerr)
			return // the others' count stays as last known
		}
		if o.w == cw {
			sent := int64(0)
			if s.sentWin == o.w {
				sent = s.sent
			}
			s.setOthers(o.w, total-sent)
		}
		return
	}
	total, ierr := o.incr.Result()
	if ierr == nil {
		s.sent = o.local
		if o.w == cw {
			s.setOthers(o.w, total-o.local)
		}
		if o.w < cw && s.local.CompareAndSwap(o.snap, 0) {
			s.sentWin, s.sent = -1, 0
		}
		return
	}
	rd.fail(ierr)
	if o.w >= cw {
		return // sent again at the next sync
	}
	// A finished window Redis did not take: a day's or a month's delta
	// waits in pending (bounded: one per counter window, dropped when
	// its key would have expired).
	key := windowKey(o.c.name, o.c.window, o.w)
	exp := windowEnd(o.c.window, o.w).Add(keyGrace(o.c.window))
	if rd.now.Before(exp) {
		p := r.pending[key]
		r.pending[key] = pendingDelta{delta: p.delta + o.delta, expire: exp}
	}
	s.sent = o.local
	if s.local.CompareAndSwap(o.snap, 0) {
		s.sentWin, s.sent = -1, 0
	}
}

// logState says the store's state: a line a minute at most, whatever the
// store does; a store that comes and goes says it once, and once that it
// is back, or, a Sentinel having named another primary, once that it
// failed over (saying it is back).
func (r *Redis) logState(err error, now time.Time) {
	prim := ""
	if p := r.primary.Load(); p != nil {
		prim = *p
	}
	switch {
	case err != nil && (r.lastDown.IsZero() || now.Sub(r.lastDown) >= downLogEvery):
		r.log.Warn("shared counter store unreachable: deciding on this replica's counts until it is back",
			"store", r.host, "error", err.Error())
		r.down, r.lastDown = true, now
	case err == nil && prim != r.atPrim && r.atPrim != "":
		r.log.Warn("shared counter store failed over: counting at its new primary, this replica's counts reconciled",
			"store", r.host, "primary", prim, "previous", r.atPrim)
		r.down = false
	case err == nil && r.down:
		r.log.Info("shared counter store reachable again: this replica's counts reconciled", "store", r.host)
		r.down = false
	}
	if err == nil && prim != "" {
		r.atPrim = prim
	}
}
