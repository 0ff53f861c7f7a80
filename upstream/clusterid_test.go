package upstream

import (
	"testing"

	"github.com/flexway/flexway/configs"
	"github.com/twmb/franz-go/pkg/kfake"
)

// U3: the cluster id is read from the Metadata answer of the first
// connection: two upstreams on one cluster, under two addresses, give the
// same id; another cluster gives its own.
func TestClusterIDFromFirstMetadata(t *testing.T) {
	newCluster := func(id string) *kfake.Cluster {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID(id))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	one, two := newCluster("physical-1"), newCluster("physical-2")
	byAddr := func(addr string) *configs.Upstream {
		return &configs.Upstream{Protocol: "kafka", Brokers: []string{addr}, Timeout: configs.Duration(configs.DefaultUpstreamTimeout)}
	}
	addr := one.ListenAddrs()[0]
	port := addr[len("127.0.0.1:"):]
	for _, c := range []struct {
		broker, want string
	}{
		{addr, "physical-1"},
		{"localhost:" + port, "physical-1"},
		{two.ListenAddrs()[0], "physical-2"},
	} {
		if got := start(t, byAddr(c.broker)).ClusterID(); got != c.want {
			t.Errorf("upstream on %s: cluster id %q, want %q", c.broker, got, c.want)
		}
	}
	if got := start(t, embedded(1, 1)).ClusterID(); got != "flexway-embedded-events" {
		t.Errorf("embedded upstream: cluster id %q, want flexway-embedded-events", got)
	}
}
