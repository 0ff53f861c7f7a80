package upstream

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
)

// U1 (issue 24.4): upstreams.<n>.timeout bounds a broker connection whole,
// TCP, TLS and SASL together. A TCP connection that took most of it (a
// slow network, here a dial held back) leaves the SASL exchange only the
// rest: a broker that accepts and never answers fails the dial at the
// timeout, not at the TCP's time plus another timeout.
func TestDialOneTimeoutForTheWhole(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	const timeout = 3 * time.Second
	cfg := saslConfig([]string{ln.Addr().String()}, "PLAIN", "s3cret")
	cfg.Timeout = configs.Duration(timeout)
	u := &Upstream{name: "events", cfg: cfg, nodes: map[int32]string{}}
	if err := u.Update(cfg); err != nil {
		t.Fatal(err)
	}
	tcp := timeout * 7 / 10
	u.testTCP = func(ctx context.Context, addr string, deadline time.Time) (net.Conn, error) {
		time.Sleep(tcp) // the network's time: part of the scenario, not a wait
		d := net.Dialer{Deadline: deadline}
		return d.DialContext(ctx, "tcp", addr)
	}
	began := time.Now()
	c, err := u.Dial(context.Background(), ln.Addr().String())
	took := time.Since(began)
	if err == nil {
		c.Close()
		t.Fatal("a dial to a broker that never answers succeeded")
	}
	if took > timeout+timeout/4 {
		t.Fatalf("the dial failed after %v (%v): the timeout, %v, is for TCP and SASL together", took.Round(time.Millisecond), err, timeout)
	}
	t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
}
