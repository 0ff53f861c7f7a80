package engine

import (
	"fmt"
	"net"
	"sync"
	"testing"
)

// brokerListener is a hand-written test broker's socket on loopback: it
// runs serve for each connection it accepts and closes them all, and
// waits for their goroutines, when the test ends.
type brokerListener struct {
	host string
	port int32

	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// newBrokerListener listens; start begins accepting (after the broker
// holding it is built, so serve sees it whole).
func newBrokerListener(t *testing.T) *brokerListener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().(*net.TCPAddr)
	b := &brokerListener{ln: ln, host: a.IP.String(), port: int32(a.Port)}
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		for _, c := range b.conns {
			c.Close()
		}
		b.mu.Unlock()
		b.wg.Wait()
	})
	return b
}

func (b *brokerListener) start(serve func(net.Conn)) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			c, err := b.ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
			b.wg.Add(1)
			go func() { defer b.wg.Done(); serve(c) }()
		}
	}()
}

// upstream is the env's upstreams.events for this broker.
func (b *brokerListener) upstream() string {
	return fmt.Sprintf("    brokers: [\"%s:%d\"]\n", b.host, b.port)
}
