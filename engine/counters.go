package engine

import (
	"fmt"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine/signals"
	"github.com/flexway/flexway/quota/counters"
)

// openCounters opens server.counters' shared store (issue 8 item 4, Q3),
// or takes the one WithCounters gave (tests). Without either, e.env.Quotas.Counters
// stays nil: no quota policy loads without server.counters. The store is
// start-only (configs.StartOnlyDiff): its counts live as long as the
// process.
func (e *Engine) openCounters(snap *configs.Snapshot) error {
	e.env.Quotas.Log = signals.NewRateLimiter(10)
	if e.opts.Counters != nil {
		e.env.Quotas.Counters = e.opts.Counters
		return nil
	}
	c := snap.File.Server.Counters
	if c == nil || c.Store == "" {
		return nil
	}
	r, err := counters.Open(c.Store, time.Duration(c.Sync), e.log)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrEngineConfig, err)
	}
	e.env.Quotas.Counters, e.env.Quotas.Own = r, true
	e.log.Info("shared counter store", "store", r.Host(), "sync", time.Duration(c.Sync).String())
	return nil
}

// closeCounters closes the store the engine opened (a last reconciliation,
// bounded); one a test gave is the test's.
func (e *Engine) closeCounters() {
	if e.env.Quotas.Own && e.env.Quotas.Counters != nil {
		e.env.Quotas.Counters.Close()
	}
}
