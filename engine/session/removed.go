package session

// The connections of a virtual cluster a reload removed (S1): closed at
// once on their loops, and refused at their open after it.

import (
	"sync"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine/signals"
)

// CloseRemoved closes, on each loop, the connections of the virtual
// clusters snap (the configuration a reload put in force) no longer
// declares (S1): at once, not at their next request (a consumer waiting
// on a Fetch would hold its cluster open), with the line of seed 002's
// "undeclared cluster" (signals.CloseClusterRemoved). It returns once every
// loop has closed them; a connection opened after that on a removed
// cluster's port is closed at its open (ClusterGone).
func (env *Env) CloseRemoved(snap *configs.Snapshot) {
	var wg sync.WaitGroup
	for _, l := range env.Loops() {
		wg.Add(1)
		if err := l.Run("reload", func() {
			defer wg.Done()
			for cl := range l.clients {
				if c := cl.route.Cluster; c != nil && snap.Clusters[c.Name] == nil {
					cl.closeRemoved()
				}
			}
		}); err != nil {
			wg.Done()
		}
	}
	wg.Wait()
}

// closeRemoved closes a connection whose cluster a reload removed.
func (cl *Client) closeRemoved() {
	attrs := []any{"cluster", cl.route.Cluster.Name}
	if cl.auth.ident != nil {
		attrs = append(attrs, "tenant", cl.auth.ident.Tenant)
	}
	cl.close(signals.CloseClusterRemoved, attrs...)
}

// ClusterGone reports whether route names a virtual cluster the
// configuration in force no longer declares (a reload removed it).
func (env *Env) ClusterGone(route Route) bool {
	return route.Cluster != nil && env.Snap.Load().Clusters[route.Cluster.Name] == nil
}
