// The fault injector's cluster: Open starts kfake with a Toxiproxy proxy
// in front of each broker, for a test (NewCluster) or a program that runs
// for minutes and has no testing.TB (bench/cmd/soak); Close ends it.
package faults

import (
	"fmt"
	"net"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Open starts a kfake cluster with opts (not kfake.ListenFn, which it
// sets) and a proxy in front of each broker; the caller closes it with
// Close. Some toxics log through zerolog's global logger, at trace level:
// silenced, as the server's own logger is.
func Open(opts ...kfake.Opt) (*Cluster, error) {
	zerolog.SetGlobalLevel(zerolog.Disabled)
	c := &Cluster{server: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())}
	listen := func(network, address string) (net.Listener, error) {
		ln, err := net.Listen(network, address)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		p := toxiproxy.NewProxy(c.server, fmt.Sprintf("broker-%d", len(c.proxies)), "127.0.0.1:0", ln.Addr().String())
		if err := p.Start(); err != nil {
			ln.Close()
			return nil, err
		}
		c.proxies = append(c.proxies, p)
		addr, err := net.ResolveTCPAddr("tcp", p.Listen)
		if err != nil {
			ln.Close()
			return nil, err
		}
		return announced{Listener: ln, addr: addr}, nil
	}
	k, err := kfake.NewCluster(append(opts, kfake.ListenFn(listen))...)
	if err != nil {
		c.Close()
		return nil, err
	}
	c.Cluster = k
	return c, nil
}

// Close stops the cluster and its proxies.
func (c *Cluster) Close() {
	if c.Cluster != nil {
		c.Cluster.Close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.proxies {
		p.Stop()
	}
}

// Brokers is the number of brokers (and proxies) of the cluster.
func (c *Cluster) Brokers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.proxies)
}
