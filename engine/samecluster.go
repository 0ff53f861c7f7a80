package engine

import (
	"fmt"
	"sort"

	"github.com/flexway/flexway/engine/session"

	"github.com/flexway/flexway/configs"
)

// U3 (seed 001 "Les noms des groupes et des transactions"): two upstreams
// that reach one broker under two prefixes are refused at load; addresses
// do not tell everything (an alias, a load balancer, another listener of
// the same cluster), so the cluster id each upstream's brokers give in the
// Metadata answer of its first connection (upstream.Start) is compared
// too. The later of two upstreams that name the same physical cluster
// under different prefixes is refused: every connection to a virtual
// cluster it serves is closed at once (the plaintext ports at accept, the
// TLS port once SNI names the cluster), with the seed's line, at Error.

// servedUpstreams lists the upstreams that serve a cluster, by name: the
// order of their first connections.
func servedUpstreams(snap *configs.Snapshot) []string {
	seen := map[string]bool{}
	var out []string
	for _, cl := range snap.Clusters {
		if !seen[cl.Upstream] {
			seen[cl.Upstream] = true
			out = append(out, cl.Upstream)
		}
	}
	sort.Strings(out)
	return out
}

// upstreamPrefixes lists the prefixes under which an upstream is served.
func upstreamPrefixes(snap *configs.Snapshot, name string) map[string]bool {
	out := map[string]bool{}
	for _, cl := range snap.Clusters {
		if cl.Upstream == name {
			out[cl.Prefix] = true
		}
	}
	return out
}

// samePhysicalCluster compares the cluster id of upstream name in f with
// those of the other upstreams of f not refused themselves, in the order
// of their names; it returns the first that names the same physical
// cluster under other prefixes ("" if none).
func samePhysicalCluster(snap *configs.Snapshot, f *session.Fleet, name string) string {
	id := f.Upstreams[name].ClusterID()
	if id == "" {
		return "" // Metadata v0, v1: told apart by addresses only (at load)
	}
	mine := upstreamPrefixes(snap, name)
	for _, other := range servedUpstreams(snap) {
		u := f.Upstreams[other]
		if other == name || u == nil || u.ClusterID() != id || f.SameCluster[other] != "" {
			continue
		}
		if samePrefixes(mine, upstreamPrefixes(snap, other)) {
			continue
		}
		return other
	}
	return ""
}

func samePrefixes(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for p := range a {
		if !b[p] {
			return false
		}
	}
	return true
}

// RefusedClusters returns the virtual clusters whose connections are
// refused (U3), each with why: the seed's line, then the refused upstream,
// the cluster id and the earlier upstream that reaches it. The start
// banner names them instead of a bootstrap nobody can use.
func (e *Engine) RefusedClusters() map[string]string {
	out := map[string]string{}
	f := e.env.Fleet()
	if len(f.SameCluster) == 0 {
		return out
	}
	for name, cl := range e.Snapshot().Clusters {
		other, ok := f.SameCluster[cl.Upstream]
		if !ok {
			continue
		}
		id := ""
		if u := f.Upstreams[cl.Upstream]; u != nil {
			id = u.ClusterID()
		}
		out[name] = fmt.Sprintf("%s (upstream %s reaches cluster id %s, as upstream %s does)", session.MsgSameCluster, cl.Upstream, id, other)
	}
	return out
}
