package testkit

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// Dialer connects to each of its addresses every period until stopped,
// and counts the dials and the refused ones (an upgrade that refuses
// nobody: cmd/flexway's handover tests, bench/cmd/soak's upgrade).
type Dialer struct {
	mu      sync.Mutex
	dials   int
	refused []string
	stopc   chan struct{}
	done    sync.WaitGroup
}

// DialEvery starts a Dialer.
func DialEvery(period time.Duration, addrs ...string) *Dialer {
	d := &Dialer{stopc: make(chan struct{})}
	for _, a := range addrs {
		d.done.Add(1)
		go func() {
			defer d.done.Done()
			tick := time.NewTicker(period)
			defer tick.Stop()
			for {
				select {
				case <-d.stopc:
					return
				case <-tick.C:
				}
				c, err := net.DialTimeout("tcp", a, 2*time.Second)
				d.mu.Lock()
				d.dials++
				if err != nil {
					d.refused = append(d.refused, fmt.Sprintf("%s at %s: %v", a, time.Now().Format("15:04:05.000"), err))
				}
				d.mu.Unlock()
				if err == nil {
					_ = c.Close()
				}
			}
		}()
	}
	return d
}

// Stop ends the dials and returns how many were made and why each
// refused one failed (its address and time).
func (d *Dialer) Stop() (dials int, refused []string) {
	close(d.stopc)
	d.done.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dials, d.refused
}
