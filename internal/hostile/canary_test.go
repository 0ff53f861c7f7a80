package hostile

// The canary: tenant globex, with a franz-go client of each round's own (new
// connections at every moment of the attack: the port must accept, not only
// serve what it already holds), produces a record and reads it back, each
// round within canaryDeadline. The attack passes only if every round did.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// canaryDeadline bounds one round (two clients' connections, a produce, a
// fetch): "within seconds", generous for a loaded two-core machine.
const canaryDeadline = 10 * time.Second

type canary struct {
	g      *gateway
	mu     sync.Mutex
	rounds int   // rounds done
	during int   // rounds begun while the attack ran
	err    error // the first round that failed
	attack bool
	// kept: the clients of an established globex (made before the attack,
	// authenticated), used by every round instead of new ones; nil: new
	// clients each round.
	kept *keptClients
	stop chan struct{}
	done chan struct{}
}

// startCanary runs one round, then rounds one after the other until end.
// The first round is done before it returns: the attack starts on a
// gateway that served globex.
func startCanary(g *gateway, established bool) (*canary, error) {
	c := &canary{g: g, stop: make(chan struct{}), done: make(chan struct{})}
	if established {
		c.kept = &keptClients{}
	}
	if err := c.round(0); err != nil {
		return nil, fmt.Errorf("before the attack: %w", err)
	}
	c.attack = true
	go func() {
		defer close(c.done)
		for i := 1; ; i++ {
			c.mu.Lock()
			if c.attack {
				c.during++
			}
			c.mu.Unlock()
			err := c.round(i)
			c.mu.Lock()
			c.rounds++
			if err != nil && c.err == nil {
				c.err = err
			}
			c.mu.Unlock()
			select {
			case <-c.stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	return c, nil
}

// attackOver marks the attack's end: rounds begun later are not "during".
func (c *canary) attackOver() {
	c.mu.Lock()
	c.attack = false
	c.mu.Unlock()
}

// end waits for the round under way and says whether the canary lived:
// at least one round during the attack, none failed.
func (c *canary) end() error {
	close(c.stop)
	<-c.done
	if c.kept != nil {
		c.kept.close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return fmt.Errorf("canary: %w", c.err)
	}
	if c.during == 0 {
		return fmt.Errorf("canary: no round during the attack")
	}
	return nil
}

// round produces one record as globex and reads it back, within canaryDeadline.
func (c *canary) round(i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), canaryDeadline)
	defer cancel()
	start := time.Now()
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.g.kafka()),
		kgo.SASL(plain.Auth{User: "globex-app", Pass: c.g.keys["globex-app"]}.AsMechanism()),
		kgo.DialTimeout(canaryDeadline),
	}
	if c.kept != nil {
		return c.kept.round(ctx, opts, i, start)
	}
	p, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic("orders"))...)
	if err != nil {
		return err
	}
	defer p.Close()
	val := fmt.Sprintf("canary-%d-%d", i, start.UnixNano())
	res := p.ProduceSync(ctx, &kgo.Record{Value: []byte(val)})
	rec, err := res.First()
	if err != nil {
		return fmt.Errorf("round %d: produce after %v: %w", i, time.Since(start).Round(time.Millisecond), err)
	}
	cons, err := kgo.NewClient(append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"orders": {rec.Partition: kgo.NewOffset().At(rec.Offset)}}))...)
	if err != nil {
		return err
	}
	defer cons.Close()
	for {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("round %d: record not read back within %v", i, canaryDeadline)
		}
		if err := fs.Err0(); err != nil {
			return fmt.Errorf("round %d: fetch after %v: %w", i, time.Since(start).Round(time.Millisecond), err)
		}
		for it := fs.RecordIter(); !it.Done(); {
			if string(it.Next().Value) == val {
				return nil
			}
		}
	}
}

// keptClients are an established globex's producer and consumer: made at
// the first round, kept until the canary ends (an attack that fills the
// places of new connections must leave the ones authenticated served).
type keptClients struct {
	p, cons *kgo.Client
}

func (k *keptClients) round(ctx context.Context, opts []kgo.Opt, i int, start time.Time) error {
	if k.p == nil {
		var err error
		if k.p, err = kgo.NewClient(append(opts, kgo.DefaultProduceTopic("orders"))...); err != nil {
			return err
		}
		if k.cons, err = kgo.NewClient(append(opts, kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))...); err != nil {
			return err
		}
	}
	val := fmt.Sprintf("kept-canary-%d-%d", i, start.UnixNano())
	if err := k.p.ProduceSync(ctx, &kgo.Record{Value: []byte(val)}).FirstErr(); err != nil {
		return fmt.Errorf("round %d (established): produce after %v: %w", i, time.Since(start).Round(time.Millisecond), err)
	}
	for {
		fs := k.cons.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("round %d (established): record not read back within %v", i, canaryDeadline)
		}
		for it := fs.RecordIter(); !it.Done(); {
			if string(it.Next().Value) == val {
				return nil
			}
		}
	}
}

func (k *keptClients) close() {
	if k.p != nil {
		k.p.Close()
		k.cons.Close()
	}
}
