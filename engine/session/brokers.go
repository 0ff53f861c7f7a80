package session

import (
	"strconv"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/upstream"
)

// brokerNames renames brokers for one cluster's clients (L2): node n is
// announced at advertised_host:from+1+(n-first_node_id); a node outside the
// range as broker-<n>.<cluster>.unmapped.invalid, logged once per node.
type brokerNames struct {
	env     *Env
	cluster *configs.Cluster
	up      *upstream.Upstream
	tls     bool // the client came in on the TLS listener: names by SNI
}

// Advertise implements decide.Brokers.
func (b *brokerNames) Advertise(node int32) (string, int32) {
	l := b.env.Snap.Load().Listener
	if b.tls {
		// L1: broker-<id>.<cluster>.<sni_domain>, at advertised_port.
		port := l.AdvertisedPort
		if port == 0 {
			port = b.env.Sec.TLSPort
		}
		return "broker-" + strconv.Itoa(int(node)) + "." + b.cluster.Name + "." + l.SNIDomain, int32(port)
	}
	pc := l.Plaintext.Clusters[b.cluster.Name]
	host := l.Plaintext.AdvertisedHost
	idx := int64(node) - int64(pc.FirstNodeID)
	port := int64(pc.Ports.From) + 1 + idx
	if idx < 0 || port > int64(pc.Ports.To) {
		b.env.logUnmapped(b.cluster.Name, node)
		return "broker-" + strconv.Itoa(int(node)) + "." + b.cluster.Name + ".unmapped.invalid", int32(pc.Ports.From)
	}
	return host, int32(port)
}

// Learn implements decide.Brokers.
func (b *brokerNames) Learn(node int32, host string, port int32) { b.up.Learn(node, host, port) }

func (env *Env) logUnmapped(cluster string, node int32) {
	key := cluster + "/" + strconv.Itoa(int(node))
	if _, seen := env.unmappedSeen.LoadOrStore(key, true); !seen {
		env.Log.Warn("kafka broker outside the fallback range: announced as unmapped.invalid", "cluster", cluster, "node", node)
	}
}
