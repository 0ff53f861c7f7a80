package engine

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// upstreamState is one upstream as the engine knows it: its brokers'
// addresses by node id (kept current from the Metadata answers that pass
// through), their ApiVersions, and the embedded cluster when there is one.
type upstreamState struct {
	name     string
	cfg      *configs.Upstream
	seeds    []string
	embedded *kfake.Cluster

	mu        sync.RWMutex
	nodes     map[int32]string // node id -> host:port
	clusterID string
	versions  []*kmsg.ApiVersionsResponse
	next      int // round robin over seeds for bootstrap connections
}

// startUpstream starts the embedded cluster if declared, then asks every
// broker its versions and the cluster's metadata.
func startUpstream(ctx context.Context, name string, cfg *configs.Upstream, seedTopics []string) (*upstreamState, error) {
	u := &upstreamState{name: name, cfg: cfg, nodes: map[int32]string{}}
	if em := cfg.Embedded; em != nil {
		n := max(em.Brokers, 1)
		var opts []kfake.Opt
		opts = append(opts, kfake.NumBrokers(n), kfake.ClusterID("flexway-embedded-"+name))
		if em.Port > 0 {
			ports := make([]int, n)
			for i := range ports {
				ports[i] = em.Port + i
			}
			opts = append(opts, kfake.Ports(ports...))
		}
		host := em.Host
		if host == "" {
			host = "127.0.0.1"
		}
		opts = append(opts, kfake.ListenFn(func(network, addr string) (net.Listener, error) {
			_, port, _ := net.SplitHostPort(addr)
			return net.Listen(network, net.JoinHostPort(host, port))
		}))
		parts := em.Partitions
		if parts <= 0 {
			parts = 3
		}
		if len(seedTopics) > 0 {
			opts = append(opts, kfake.SeedTopics(parts, seedTopics...))
		}
		c, err := kfake.NewCluster(opts...)
		if err != nil {
			return nil, fmt.Errorf("%w: embedded upstream %s: %v", ErrEngineUpstream, name, err)
		}
		u.embedded = c
		u.seeds = c.ListenAddrs()
	} else {
		u.seeds = append(u.seeds, cfg.Brokers...)
	}
	if err := u.refresh(ctx); err != nil {
		if u.embedded != nil {
			u.embedded.Close()
		}
		return nil, err
	}
	return u, nil
}

// refresh reads the brokers, the cluster id and every broker's versions
// over a control client of the gateway's own.
func (u *upstreamState) refresh(ctx context.Context) error {
	timeout := u.cfg.Timeout.D()
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	opts := []kgo.Opt{kgo.SeedBrokers(u.seeds...), kgo.DialTimeout(timeout), kgo.ClientID("flexway")}
	opts = append(opts, upstreamClientOpts(u.cfg)...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrEngineUpstream, u.name, err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*timeout)
	defer cancel()
	meta := kmsg.NewPtrMetadataRequest()
	meta.Topics = []kmsg.MetadataRequestTopic{}
	mr, err := meta.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("%w: %s: metadata: %v", ErrEngineUpstream, u.name, err)
	}
	var versions []*kmsg.ApiVersionsResponse
	for _, b := range mr.Brokers {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "flexway", "1"
		resp, err := cl.Broker(int(b.NodeID)).RetriableRequest(ctx, req)
		if err != nil {
			return fmt.Errorf("%w: %s: broker %d versions: %v", ErrEngineUpstream, u.name, b.NodeID, err)
		}
		versions = append(versions, resp.(*kmsg.ApiVersionsResponse))
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, b := range mr.Brokers {
		u.nodes[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	if mr.ClusterID != nil {
		u.clusterID = *mr.ClusterID
	}
	u.versions = versions
	return nil
}

// addr returns the address of node (or of a seed for the bootstrap, node < 0).
func (u *upstreamState) addr(node int32) (string, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if node < 0 {
		if len(u.nodes) > 0 {
			ids := make([]int32, 0, len(u.nodes))
			for id := range u.nodes {
				ids = append(ids, id)
			}
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			u.next++
			return u.nodes[ids[u.next%len(ids)]], true
		}
		u.next++
		return u.seeds[u.next%len(u.seeds)], true
	}
	a, ok := u.nodes[node]
	return a, ok
}

// learn records a broker's address read from a Metadata answer.
func (u *upstreamState) learn(node int32, host string, port int32) {
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

func (u *upstreamState) close() {
	if u.embedded != nil {
		u.embedded.Close()
	}
}

// upstreamClientOpts are the control client's TLS and SASL options.
// Per-connection upstream TLS and SASL are not served yet: a configuration
// that asks for them is refused at start (see New).
func upstreamClientOpts(cfg *configs.Upstream) []kgo.Opt { return nil }
