package testkit

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Redis forms an operator runs for availability (issue 36 item 5):
// a primary with its replica watched by Sentinels, and a Cluster, each
// node a redis-server of its own, started like StartRedis's.

// SentinelMaster is the master name StartRedisSentinel's Sentinels watch.
const SentinelMaster = "flexway"

// RedisSentinel is a primary, its replica and three Sentinels (quorum 2)
// watching it. The primary killed, the Sentinels promote the replica
// within seconds: down after 1 s, a failover timeout of 5 s.
type RedisSentinel struct {
	Primary, Replica *Redis
	Sentinels        []*Redis
	Password         string // the data nodes' (requirepass, masterauth); the Sentinels ask none
}

// StartRedisSentinel starts them and waits until the replica is in sync
// and every Sentinel knows it and the two others (a failover needs them).
func StartRedisSentinel(t testing.TB, password string) *RedisSentinel {
	t.Helper()
	s := &RedisSentinel{Password: password}
	s.Primary = startRedisAs(t, &Redis{pass: password})
	s.Replica = startRedisAs(t, &Redis{pass: password,
		extra: []string{"--replicaof", "127.0.0.1", strconv.Itoa(s.Primary.Port)}})
	waitRedis(t, "the replica in sync with the primary", func() bool {
		v, _ := s.Replica.Do("INFO", "replication")
		return strings.Contains(v, "master_link_status:up")
	})
	conf := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2\n"+
		"sentinel down-after-milliseconds %[1]s 1000\n"+
		"sentinel failover-timeout %[1]s 5000\n", SentinelMaster, s.Primary.Port)
	if password != "" {
		conf += fmt.Sprintf("sentinel auth-pass %s %s\n", SentinelMaster, password)
	}
	for range 3 {
		s.Sentinels = append(s.Sentinels, startRedisAs(t, &Redis{sentinel: conf}))
	}
	waitRedis(t, "every Sentinel knows the replica and the two other Sentinels", func() bool {
		for _, x := range s.Sentinels {
			v, _ := x.Do("SENTINEL", "MASTER", SentinelMaster)
			f := pairs(v)
			if f["num-slaves"] != "1" || f["num-other-sentinels"] != "2" {
				return false
			}
		}
		return true
	})
	return s
}

// URL is the store's redis-sentinel:// URL: every Sentinel, the master
// name, the data nodes' password.
func (s *RedisSentinel) URL() string {
	addrs := make([]string, len(s.Sentinels))
	for i, x := range s.Sentinels {
		addrs[i] = x.Addr()
	}
	user := ""
	if s.Password != "" {
		user = ":" + s.Password + "@"
	}
	return "redis-sentinel://" + user + strings.Join(addrs, ",") + "/" + SentinelMaster
}

// PrimaryAddrs is the primary's host:port as each Sentinel names it ("" for
// one that does not answer).
func (s *RedisSentinel) PrimaryAddrs() []string {
	out := make([]string, len(s.Sentinels))
	for i, x := range s.Sentinels {
		if v, err := x.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster); err == nil {
			if h, p, ok := strings.Cut(v, "\n"); ok {
				out[i] = h + ":" + p
			}
		}
	}
	return out
}

// RedisCluster is a Redis Cluster of masters without replicas, the slots
// shared evenly.
type RedisCluster struct{ Nodes []*Redis }

// StartRedisCluster starts n nodes, gives each its slots, joins them and
// waits until every node says the cluster is ok.
func StartRedisCluster(t testing.TB, n int) *RedisCluster {
	t.Helper()
	c := &RedisCluster{}
	bus := make([]int, n)
	for i := range n {
		bus[i] = FreePort(t) // the bus port, named: port+10000 may lie above 32767
		c.Nodes = append(c.Nodes, startRedisAs(t, &Redis{extra: []string{"--cluster-enabled", "yes",
			"--cluster-port", strconv.Itoa(bus[i]), "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "2000"}}))
	}
	for i, x := range c.Nodes {
		lo, hi := i*16384/n, (i+1)*16384/n-1
		if v, err := x.Do("CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); v != "+OK" {
			t.Fatalf("CLUSTER ADDSLOTSRANGE on %s: %q %v", x.Addr(), v, err)
		}
		if i > 0 {
			if v, err := c.Nodes[0].Do("CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(x.Port), strconv.Itoa(bus[i])); v != "+OK" {
				t.Fatalf("CLUSTER MEET %s: %q %v", x.Addr(), v, err)
			}
		}
	}
	waitRedis(t, "every node says the cluster is ok", func() bool {
		for _, x := range c.Nodes {
			v, _ := x.Do("CLUSTER", "INFO")
			if !strings.Contains(v, "cluster_state:ok") || !strings.Contains(v, "cluster_known_nodes:"+strconv.Itoa(n)) {
				return false
			}
		}
		return true
	})
	return c
}

// Do sends a one-key command to the node that holds the key's slot (the
// others answer MOVED) and returns its reply and that node's index.
func (c *RedisCluster) Do(args ...string) (string, int, error) {
	var last error
	for i, x := range c.Nodes {
		v, err := x.Do(args...)
		if err != nil {
			last = err
			continue
		}
		if !strings.HasPrefix(v, "-MOVED") && !strings.HasPrefix(v, "-ASK") {
			return v, i, nil
		}
	}
	return "", -1, fmt.Errorf("no node holds %v: %v", args, last)
}

// pairs reads a flat array of names and values (SENTINEL MASTER).
func pairs(v string) map[string]string {
	f := strings.Split(v, "\n")
	m := make(map[string]string, len(f)/2)
	for i := 0; i+1 < len(f); i += 2 {
		m[f[i]] = f[i+1]
	}
	return m
}

// waitRedis waits for the servers to be ready, 60 s at most (a loaded
// machine; Sentinels meet each other every 2 s).
func waitRedis(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 60 s: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
