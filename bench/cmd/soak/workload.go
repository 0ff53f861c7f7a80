// The soak's clients (franz-go, library defaults but for what each role
// needs): per tenant an idempotent producer (acks=all) and a group of
// members reading its topic, a transactional producer and a
// read_committed member reading its topic; what each writes and reads
// goes into the run's books. Every connection they dial is tracked so
// that the soak can cut one at random, and each client can be told to
// close and start again.
package main

import (
	"context"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// books are what the run counts, under one lock.
type books struct {
	mu        sync.Mutex
	sent      int                // events handed to a producer
	acked     map[uint64]bool    // events acknowledged
	read      map[uint64]int     // events read by the groups, and how often
	txns      map[uint64]outcome // transactions and their outcome
	txnSize   map[uint64]int     // records of each transaction
	ledger    map[uint64]int     // ledger records read by the read_committed groups
	errs      map[string]int     // errors by client role and kind
	errSec    map[int]int        // errors by second of the run
	start     time.Time          // the run's start, for errSec
	cuts      int                // client connections cut at random
	restarts  int                // clients closed and started again
	pending   int                // events produced, not yet answered
	lastAcked time.Time
}

func newBooks() *books {
	return &books{acked: map[uint64]bool{}, read: map[uint64]int{}, txns: map[uint64]outcome{},
		txnSize: map[uint64]int{}, ledger: map[uint64]int{}, errs: map[string]int{}, errSec: map[int]int{}, start: time.Now()}
}

func (b *books) err(role string, err error) {
	b.mu.Lock()
	b.countErr(role, err)
	b.mu.Unlock()
}

// countErr books an error of role, under b.mu.
func (b *books) countErr(role string, err error) {
	b.errs[role+": "+errKind(err)]++
	b.errSec[int(time.Since(b.start)/time.Second)]++
}

// errorsIn counts the errors booked from from to to (since the run's
// start), by whole seconds: a second counts if it starts in [from, to).
func (b *books) errorsIn(from, to time.Duration) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for s, c := range b.errSec {
		if at := time.Duration(s) * time.Second; at >= from && at < to {
			n += c
		}
	}
	return n
}

func (b *books) ackedCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.acked)
}

// conns tracks the open connections of every client, to cut one at random.
type conns struct {
	mu  sync.Mutex
	set map[net.Conn]struct{}
}

type trackedConn struct {
	net.Conn
	c *conns
}

func (t trackedConn) Close() error {
	t.c.mu.Lock()
	delete(t.c.set, t.Conn)
	t.c.mu.Unlock()
	return t.Conn.Close()
}

func (c *conns) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.set[conn] = struct{}{}
	c.mu.Unlock()
	return trackedConn{conn, c}, nil
}

// cutOne closes a client connection chosen at random, as a client whose
// host or network fails does; it reports whether there was one.
func (c *conns) cutOne() bool {
	c.mu.Lock()
	var victim net.Conn
	i, n := 0, rand.IntN(max(len(c.set), 1))
	for conn := range c.set {
		if i == n {
			victim = conn
			break
		}
		i++
	}
	delete(c.set, victim)
	c.mu.Unlock()
	if victim == nil {
		return false
	}
	victim.Close()
	return true
}

func (c *conns) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.set)
}

// clientFactory makes the clients of a tenant on the gateway.
type clientFactory struct {
	bootstrap string
	key       tenantKey
	conns     *conns
	b         *books
}

func (f clientFactory) client(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append(opts, kgo.SeedBrokers(f.bootstrap), kgo.Dialer(f.conns.dial),
		kgo.WithHooks(wireHook{f.b}), kgo.SASL(plain.Auth{User: f.key.id, Pass: f.key.secret}.AsMechanism()))...)
}

// wireHook books the errors a client retries on its own and never returns:
// a dial, a request's write or a response's read that failed (a connection
// cut by the soak shows as one), a group's management error.
type wireHook struct{ b *books }

func (h wireHook) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		h.b.err("client dial", err)
	}
}

func (h wireHook) OnBrokerWrite(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		h.b.err("client write", err)
	}
}

func (h wireHook) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		h.b.err("client read", err)
	}
}

func (h wireHook) OnGroupManageError(err error) { h.b.err("group", err) }

// loop is one client's life: run with a fresh client until ctx ends or a
// restart is asked, then close it and, unless ctx ended, start again.
type loop struct {
	restart chan struct{}
}

func newLoop() loop { return loop{restart: make(chan struct{}, 1)} }

// ask asks the loop's client to close and start again.
func (l loop) ask() {
	select {
	case l.restart <- struct{}{}:
	default:
	}
}

// consumeLoop is a group member (group, topic; read_committed if rc) that
// counts what it reads into into, until ctx ends.
func consumeLoop(ctx context.Context, f clientFactory, l loop, b *books, role, group, topic string, rc bool, into map[uint64]int) {
	for ctx.Err() == nil {
		opts := []kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic)}
		if rc {
			opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		}
		cl, err := f.client(opts...)
		if err != nil {
			b.err(role, err)
			return
		}
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-l.restart:
				b.mu.Lock()
				b.restarts++
				b.mu.Unlock()
				cancel()
			case <-cctx.Done():
			}
		}()
		for cctx.Err() == nil {
			fs := cl.PollFetches(cctx)
			b.mu.Lock()
			fs.EachError(func(_ string, _ int32, err error) {
				if cctx.Err() == nil {
					b.countErr(role, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				if id, ok := idOf(r.Value); ok {
					into[id]++
				}
			})
			b.mu.Unlock()
		}
		cancel()
		cl.Close() // leaves the group, commits what it read
	}
}
