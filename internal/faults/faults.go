// Package faults holds the fault injector of the tests: an embedded Kafka
// cluster (kfake) whose every broker is reached through a Toxiproxy proxy
// of its own, run in-process, so that a test can reset, blackhole, slow
// down or throttle one broker's connections at any moment.
//
// Each broker listens on a loopback port of its own, and its proxy on
// another; kfake announces the proxy's address in Metadata (its listener,
// made by kfake.ListenFn, reports the proxy's address as its own). So the
// gateway, given the proxies as upstreams.<name>.brokers, learns the
// proxies from the brokers themselves and reaches each broker through its
// proxy only, as it would reach a broker behind a real network.
package faults

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Cluster is a kfake cluster whose brokers are each behind a Toxiproxy
// proxy. Its methods may be called from any goroutine, at any moment.
type Cluster struct {
	*kfake.Cluster
	server *toxiproxy.ApiServer

	mu      sync.Mutex
	proxies []*toxiproxy.Proxy // by node id (kfake numbers its brokers 0..n-1)
}

// announced is a broker's listener that names its proxy's address as its
// own: kfake announces a broker at its listener's Addr.
type announced struct {
	net.Listener
	addr net.Addr
}

func (a announced) Addr() net.Addr { return a.addr }

// NewCluster starts a kfake cluster with opts (kfake.NumBrokers and the
// like; not kfake.ListenFn, which it sets) and a proxy in front of each
// broker; both are closed at the test's end.
func NewCluster(t testing.TB, opts ...kfake.Opt) *Cluster {
	t.Helper()
	c, err := Open(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// proxy is node's proxy.
func (c *Cluster) proxy(node int32) *toxiproxy.Proxy {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int(node) >= len(c.proxies) || node < 0 {
		panic(fmt.Sprintf("faults: no broker %d (%d brokers)", node, len(c.proxies)))
	}
	return c.proxies[node]
}

// Reset closes every connection to node at once, as a broker restarted
// does: its listener is closed, its connections closed under their unread
// bytes (a reset where the peer had sent some), then it listens again on
// the same port. A connection attempted in between is refused.
func (c *Cluster) Reset(node int32) error {
	p := c.proxy(node)
	p.Stop()
	return p.Start()
}

// Down closes node's listener and every connection to it, and refuses
// every new one (a broker process stopped, its host up) until Up.
func (c *Cluster) Down(node int32) { c.proxy(node).Stop() }

// Up listens for node again on the same port, after Down.
func (c *Cluster) Up(node int32) error { return c.proxy(node).Start() }

// Blackhole drops silently every byte to and from node, on the
// connections open and those opened later, as a host that stops answering
// does: connections stay open, nothing crosses (Toxiproxy's timeout toxic
// with timeout 0), until Heal. The bytes dropped are gone: a connection
// that carried some is no longer a Kafka stream, as a peer's request
// timeout (shorter than a real blackhole) would have closed it.
func (c *Cluster) Blackhole(node int32) error {
	return c.toxics(node, `{"name":"blackhole_%s","type":"timeout","stream":"%s","attributes":{"timeout":0}}`)
}

// Latency delays every byte to and from node by d each way.
func (c *Cluster) Latency(node int32, d time.Duration) error {
	return c.toxics(node, `{"name":"latency_%s","type":"latency","stream":"%s","attributes":{"latency":`+
		fmt.Sprint(d.Milliseconds())+`}}`)
}

// Bandwidth caps node's throughput at kib KiB/s each way.
func (c *Cluster) Bandwidth(node int32, kib int64) error {
	return c.toxics(node, `{"name":"bandwidth_%s","type":"bandwidth","stream":"%s","attributes":{"rate":`+
		fmt.Sprint(kib)+`}}`)
}

// toxics adds to node's proxy the toxic of spec (a JSON template whose two
// %s are the direction) in both directions.
func (c *Cluster) toxics(node int32, spec string) error {
	p := c.proxy(node)
	for _, dir := range []string{"upstream", "downstream"} {
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(fmt.Sprintf(spec, dir, dir))); err != nil {
			return fmt.Errorf("faults: broker %d: %w", node, err)
		}
	}
	return nil
}

// Heal removes every toxic of node: its bytes cross again, at full speed.
func (c *Cluster) Heal(node int32) {
	c.proxy(node).Toxics.ResetToxics(context.Background())
}
