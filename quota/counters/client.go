package counters

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/flexway/flexway/quota/counters/storeurl"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// ErrStoreURL is what Open's error wraps for a URL it cannot use (its
// forms: storeurl).
var ErrStoreURL = storeurl.ErrURL

// The store's own settings, whatever the form (DESIGN.md, the go-redis
// choice): a reconciliation that fails is tried again at the next sync
// with its deltas, so no retry inside one (an INCRBY retried after a lost
// answer would count twice; in a Cluster, no redirect either: a moved slot
// fails its commands for this sync, the slot map is read again for the
// next), short timeouts (the goroutine is alone), a pool of 2 (per node).
const (
	storeTimeout = time.Second
	storePool    = 2
)

// client makes the store's client; a Sentinel's reports each connection's
// address to primary (the failover line).
func newClient(s storeurl.Store, primary *atomic.Pointer[string]) redis.UniversalClient {
	off := &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	switch {
	case s.Failover != nil:
		o := s.Failover
		o.MaxRetries, o.PoolSize = -1, storePool
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = storeTimeout, storeTimeout, storeTimeout, storeTimeout
		o.ContextTimeoutEnabled, o.DisableIdentity = true, true
		cl := redis.NewFailoverClient(o)
		cl.AddHook(primaryHook{primary})
		return cl
	case s.Cluster != nil:
		o := s.Cluster
		o.MaxRetries, o.MaxRedirects, o.PoolSize = -1, -1, storePool
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = storeTimeout, storeTimeout, storeTimeout, storeTimeout
		o.ContextTimeoutEnabled, o.DisableIdentity = true, true
		o.MaintNotificationsConfig = off
		return redis.NewClusterClient(o)
	}
	o := s.One
	o.MaxRetries, o.PoolSize = -1, storePool
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = storeTimeout, storeTimeout, storeTimeout, storeTimeout
	o.ContextTimeoutEnabled, o.DisableIdentity = true, true
	o.MaintNotificationsConfig = off
	return redis.NewClient(o)
}

// primaryHook records the address of each connection the failover client
// opens: its own dials go to the primary the Sentinels name (theirs are
// another client's, without this hook).
type primaryHook struct{ primary *atomic.Pointer[string] }

func (h primaryHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err == nil {
			a := c.RemoteAddr().String()
			h.primary.Store(&a)
		}
		return c, err
	}
}

func (h primaryHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h primaryHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
