// Package upstream is the gateway's side of each Kafka cluster it forwards
// to: the brokers' address book and versions, the embedded kfake, and the
// dial of a broker connection, which it hands over to be enrolled; it never
// imports gnet. Concurrency: an Upstream is safe for concurrent use; Addr,
// Learn, Versions and the accessors take a short lock and never touch the
// network, so event loops may call them; Start, Refresh and Dial block on
// the network and must run off the loops.
package upstream

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Upstream is one upstream as the gateway knows it: its brokers' addresses
// by node id (kept current from the Metadata answers that pass through),
// their ApiVersions, and the embedded cluster when there is one.
type Upstream struct {
	name     string
	cfg      *configs.Upstream
	seeds    []string
	embedded *kfake.Cluster
	sec      securityHolder // TLS and SASL towards the brokers (secure.go)

	mu       sync.RWMutex
	nodes    map[int32]string // node id -> host:port
	versions []*kmsg.ApiVersionsResponse
	next     int // round robin for bootstrap connections

	// clusterID: from the first Metadata answer (U3), under mu; "" before v2.
	clusterID string

	// testTCP, set by a test, opens a dial's TCP connection (dialTCP).
	testTCP func(ctx context.Context, addr string, deadline time.Time) (net.Conn, error)
}

// Start starts the embedded cluster if cfg declares one (creating
// seedTopics in it), then asks every broker its versions and the cluster
// its brokers. cfg is as configs.Load returns it: its defaults applied
// (timeout, the embedded brokers, host and partitions). An error names the
// upstream; nothing is left running.
func Start(ctx context.Context, name string, cfg *configs.Upstream, seedTopics []string) (*Upstream, error) {
	if cfg.Timeout <= 0 {
		return nil, fmt.Errorf("%s: timeout %s: must be positive", name, cfg.Timeout)
	}
	u := &Upstream{name: name, cfg: cfg, nodes: map[int32]string{}}
	if err := u.Update(cfg); err != nil {
		return nil, err
	}
	if em := cfg.Embedded; em != nil {
		c, err := startEmbedded(name, em, seedTopics)
		if err != nil {
			return nil, fmt.Errorf("embedded upstream %s: %w", name, err)
		}
		u.embedded = c
		u.seeds = c.ListenAddrs()
	} else {
		u.seeds = append(u.seeds, cfg.Brokers...)
	}
	if err := u.Refresh(ctx); err != nil {
		u.Close()
		return nil, err
	}
	return u, nil
}

// startEmbedded runs em's kfake brokers on em.Host, at em.Port and the
// ports after it (any free ports when 0).
func startEmbedded(name string, em *configs.Embedded, seedTopics []string) (*kfake.Cluster, error) {
	opts := []kfake.Opt{kfake.NumBrokers(em.Brokers), kfake.ClusterID("flexway-embedded-" + name)}
	if em.Port > 0 {
		ports := make([]int, em.Brokers)
		for i := range ports {
			ports[i] = em.Port + i
		}
		opts = append(opts, kfake.Ports(ports...))
	}
	host := em.Host
	opts = append(opts, kfake.ListenFn(func(network, addr string) (net.Listener, error) {
		_, port, _ := net.SplitHostPort(addr)
		return net.Listen(network, net.JoinHostPort(host, port))
	}))
	if len(seedTopics) > 0 {
		opts = append(opts, kfake.SeedTopics(em.Partitions, seedTopics...))
	}
	return kfake.NewCluster(opts...)
}

// Refresh reads the brokers and every broker's versions over a control
// client of the gateway's own, within three times the upstream's timeout.
func (u *Upstream) Refresh(ctx context.Context) error {
	timeout := u.cfg.Timeout.D()
	// TLS and SASL towards the brokers are options of this client as
	// well as steps of Dial (secure.go).
	cl, err := kgo.NewClient(append(u.clientOpts(), kgo.SeedBrokers(u.seeds...), kgo.DialTimeout(timeout), kgo.ClientID("flexway"))...)
	if err != nil {
		return fmt.Errorf("%s: %w", u.name, err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*timeout)
	defer cancel()
	meta := kmsg.NewPtrMetadataRequest()
	meta.Topics = []kmsg.MetadataRequestTopic{}
	mr, err := meta.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("%s: metadata: %w", u.name, err)
	}
	var versions []*kmsg.ApiVersionsResponse
	for _, b := range mr.Brokers {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "flexway", "1"
		resp, err := cl.Broker(int(b.NodeID)).RetriableRequest(ctx, req)
		if err != nil {
			return fmt.Errorf("%s: broker %d versions: %w", u.name, b.NodeID, err)
		}
		versions = append(versions, resp.(*kmsg.ApiVersionsResponse))
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, b := range mr.Brokers {
		u.nodes[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	u.versions = versions
	if u.clusterID == "" && mr.ClusterID != nil {
		u.clusterID = *mr.ClusterID // the physical cluster, as the brokers name it (U3)
	}
	return nil
}

// ClusterID is the cluster id the brokers gave in the Metadata answer of
// the first connection (U3): two upstreams that give the same id reach the
// same physical cluster, whatever their addresses. "" when the brokers
// gave none (Metadata v0 and v1): such an upstream is told apart by its
// addresses only.
func (u *Upstream) ClusterID() string {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return u.clusterID
}

// Name is the upstream's name (upstreams.<name>).
func (u *Upstream) Name() string { return u.name }

// Config is the configuration the upstream was started with.
func (u *Upstream) Config() *configs.Upstream { return u.cfg }

// Versions returns every broker's ApiVersions answer, as read by the last
// Refresh. The answers are shared: read them, never change them.
func (u *Upstream) Versions() []*kmsg.ApiVersionsResponse {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return u.versions
}

// Addr returns the address of node; for the bootstrap (node < 0), the next
// known broker in turn (by node id), or the next seed before any is known.
// ok is false for a node the upstream does not know.
func (u *Upstream) Addr(node int32) (addr string, ok bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if node < 0 {
		if len(u.nodes) > 0 {
			ids := make([]int32, 0, len(u.nodes))
			for id := range u.nodes {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			u.next++
			return u.nodes[ids[u.next%len(ids)]], true
		}
		u.next++
		return u.seeds[u.next%len(u.seeds)], true
	}
	a, ok := u.nodes[node]
	return a, ok
}

// Learn records a broker's address read from a Metadata answer.
func (u *Upstream) Learn(node int32, host string, port int32) {
	a := net.JoinHostPort(host, strconv.Itoa(int(port)))
	u.mu.RLock()
	same := u.nodes[node] == a
	u.mu.RUnlock()
	if !same {
		u.mu.Lock()
		u.nodes[node] = a
		u.mu.Unlock()
	}
}

// EmbeddedAddrs returns the embedded brokers' addresses (nil for an
// upstream declared by its brokers' addresses).
func (u *Upstream) EmbeddedAddrs() []string {
	if u.embedded == nil {
		return nil
	}
	return u.embedded.ListenAddrs()
}

// Embedded returns the embedded cluster, nil for an upstream declared by its
// brokers' addresses; tests drive it through kfake's control hooks.
func (u *Upstream) Embedded() *kfake.Cluster { return u.embedded }

// Close stops the embedded cluster, if any. Connections already dialed are
// their owners' to close.
func (u *Upstream) Close() {
	if u.embedded != nil {
		u.embedded.Close()
	}
}
