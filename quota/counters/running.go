package counters

import (
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"time"

	"github.com/flexway/flexway/quota"
	"github.com/redis/go-redis/v9"
)

// A Running counter (a rate bucket's spending, quota.Running) is one Redis
// hash per name, flexway:<name>:running, shared by the replicas: field n,
// what they all added, ever; field e, the hash's epoch, set by the replica
// that made it (HSETNX, a value never used twice), so that a hash that
// expired, was flushed or died with a Redis without persistence is told
// apart from the one before. At each sync a replica adds what it spent
// since the last one (HINCRBY n, HGET e, PEXPIRE; a replica that spent
// nothing only reads, HMGET), and learns the others' part: n less what it
// added itself in that epoch. What that part grew by since its last read is
// added to the counter's others, whatever second it was spent in: nothing
// rolls over before it is learned (DESIGN.md, invariant 22). Field t is the
// latest clock of the counter's bucket any replica published (putClock):
// the debt not paid yet, which a replica whose read is a new start owes
// too (quota.Clocked, issue 34.5).
const runningKeyPrefix = "flexway:"

func runningKey(name string) string { return runningKeyPrefix + name + ":running" }

// runningTTL is how long a hash nobody adds to lives: long past a sync, so
// that only a tenant idle everywhere is forgotten (and then it owes
// nothing).
func runningTTL(sync time.Duration) time.Duration { return max(time.Minute, 4*sync) }

// runningStale is how old a counter's last read may be for the growth then
// seen to be charged: past it (the first read, or a replica cut from Redis
// for a while), the read is a new start and nothing learned is charged
// (what the others spent meanwhile is over with its time).
func runningStale(sync time.Duration) time.Duration { return 3*sync + 2*time.Second }

// running is a Running counter's reconciliation bookkeeping (the
// reconciliation's goroutine alone).
type running struct {
	sent   uint64    // of mine, what Redis was given (or given up, see settle)
	snap   uint64    // mine at the previous sync
	epoch  string    // the hash's epoch at the last read ("": no hash)
	inKey  int64     // what this replica added to the hash in that epoch
	seen   int64     // the others' part of the hash at the last read
	lastOK time.Time // the last read
	pub    int64     // the bucket's clock the hash was last given (field t)
}

// runOp is one Running counter's part of a reconciliation's pipeline.
type runOp struct {
	c     *counter
	m     uint64 // mine when read
	d     int64  // what is sent
	incr  *redis.IntCmd
	epoch *redis.StringCmd
	read  *redis.SliceCmd  // d == 0: HMGET e n t
	clock *redis.StringCmd // d > 0: HGET t
	pub   int64            // the clock published (0: none)
	put   *redis.Cmd       // its script
	t     int64            // the hash's clock as read (settle)
}

// newEpochBase is this store's part of the epochs it proposes: random, so
// that two replicas (or two lives of one) never propose the same.
func newEpochBase() string { return rand.Text()[:12] }

// queueRunning adds c's commands to pipe. epoch is this sync's proposal
// (unique per sync and store).
// byHash: the store has putClock (it ran it whole), which is then sent by
// its SHA1 (EVALSHA).
func queueRunning(ctx context.Context, pipe redis.Pipeliner, c *counter, epoch string, ttl time.Duration, now time.Time, byHash bool) runOp {
	st := c.run
	m := c.mine.Load()
	o := runOp{c: c, m: m, d: int64(m - st.sent)}
	key := runningKey(c.name)
	if tat := c.tat.Load(); tat != nil {
		// The bucket's clock while it is ahead of now (spending not paid
		// yet), when it moved: the hash keeps the latest of all (field t),
		// and lives until that debt is paid and ttl after, whoever adds.
		if v := tat.Load(); v > now.UnixNano() {
			ttl += time.Duration(v - now.UnixNano())
			if v != st.pub {
				o.pub = v
				if byHash {
					o.put = putClockScript.EvalSha(ctx, pipe, []string{key}, v, ttl.Milliseconds())
				} else {
					o.put = putClockScript.Eval(ctx, pipe, []string{key}, v, ttl.Milliseconds())
				}
			}
		}
	}
	if o.d > 0 {
		pipe.HSetNX(ctx, key, "e", epoch)
		o.incr = pipe.HIncrBy(ctx, key, "n", o.d)
		o.epoch = pipe.HGet(ctx, key, "e")
		o.clock = pipe.HGet(ctx, key, "t")
		pipe.PExpire(ctx, key, ttl)
	} else {
		o.d = 0
		o.read = pipe.HMGet(ctx, key, "e", "n", "t")
	}
	return o
}

// putClock keeps in a Running hash's field t the latest bucket clock any
// replica published (Unix ns: the replicas' clocks are taken to agree, as
// NTP keeps them, within a few ms), and the hash until it is paid (ARGV[2]
// ms at least). One script: no Redis version's options needed.
const putClock = `local t = tonumber(redis.call('HGET', KEYS[1], 't') or '0')
if tonumber(ARGV[1]) > t then
  redis.call('HSET', KEYS[1], 't', ARGV[1])
end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`

// putClockScript is putClock and its SHA1: sent whole (EVAL, which loads
// it) until the store ran it once, then by the hash (EVALSHA: 40 bytes,
// not some 300, with every clock a throttled principal publishes). A store
// that lost it (restarted, SCRIPT FLUSH, a failover to a replica without
// it, another Cluster node) answers NOSCRIPT: that clock is published
// again at the next sync, sent whole.
var putClockScript = redis.NewScript(putClock)

// The clock's script in a sync: not sent, ran, or unknown to the store.
const (
	scriptNone = iota
	scriptRan
	scriptMissing
)

// script says how o's clock script went (after Exec).
func (o *runOp) script() int {
	switch {
	case o.put == nil:
		return scriptNone
	case o.put.Err() == nil:
		return scriptRan
	case redis.HasErrorPrefix(o.put.Err(), "NOSCRIPT"):
		return scriptMissing
	}
	return scriptNone
}

// settle reads o's answers: the others' growth learned is added to the
// counter. A failure keeps the spending since the previous sync to send
// at the next one and gives up what is older: a rate is over with its time,
// and a replica back from an outage does not charge the others at once
// with all it spent alone.
func (o *runOp) settle(now time.Time, stale time.Duration) error {
	st := o.c.run
	e, v, err := o.result()
	if err == nil {
		o.t, err = o.clockRead()
	}
	if err != nil {
		if int64(st.snap-st.sent) > 0 {
			st.sent = st.snap
		}
		st.snap = o.m
		return err
	}
	st.sent, st.snap = o.m, o.m
	mineIn := st.inKey + o.d
	if e != st.epoch {
		mineIn = o.d // a new hash: of ours, it holds what was just added
	}
	othersNow := v - mineIn
	var grow int64
	o.c.learned.Store(o.t)
	switch {
	case st.lastOK.IsZero() || now.Sub(st.lastOK) > stale:
		// a new start: what is there is the past, but for the debt the
		// others left, owed here too (quota.Clocked)
		if tat := o.c.tat.Load(); tat != nil && o.t > 0 {
			quota.RaiseClock(tat, o.t)
		}
	case e != st.epoch:
		grow = othersNow // made since the last read: all of it is new
	default:
		grow = othersNow - st.seen
		othersNow = max(othersNow, st.seen)
	}
	if grow > 0 {
		o.c.others.Add(uint64(grow))
	}
	st.epoch, st.inKey, st.seen, st.lastOK = e, mineIn, othersNow, now
	if o.put != nil {
		if o.script() == scriptMissing {
			return nil // published again at the next sync, whole
		}
		if err := o.put.Err(); err != nil {
			return err // the store refuses scripts: said as a refusal is
		}
		st.pub = o.pub
	}
	return nil
}

// result is the hash's epoch ("": none) and total as o's commands read it.
func (o *runOp) result() (string, int64, error) {
	if o.incr != nil {
		v, err := o.incr.Result()
		if err != nil {
			return "", 0, err
		}
		e, err := o.epoch.Result()
		if errors.Is(err, redis.Nil) {
			err = nil
		}
		return e, v, err
	}
	vals, err := o.read.Result()
	if err != nil {
		return "", 0, err
	}
	if len(vals) != 3 {
		return "", 0, errors.New("HMGET: unexpected answer")
	}
	e, _ := vals[0].(string)
	var v int64
	if s, ok := vals[1].(string); ok {
		if v, err = strconv.ParseInt(s, 10, 64); err != nil {
			return "", 0, err
		}
	}
	return e, v, nil
}

// clockRead is the latest bucket clock the hash held (field t; 0: none).
func (o *runOp) clockRead() (int64, error) {
	var raw any
	if o.clock != nil {
		s, err := o.clock.Result()
		if errors.Is(err, redis.Nil) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		raw = s
	} else if vals := o.read.Val(); len(vals) == 3 {
		raw = vals[2]
	}
	s, ok := raw.(string)
	if !ok || s == "" {
		return 0, nil
	}
	return strconv.ParseInt(s, 10, 64)
}
