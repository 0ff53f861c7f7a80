package session

import (
	"strings"
	"sync"

	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/decide"
)

// The sessions of one identity share its view (decide.View, read-only once
// its admin scopes are set): one per cluster, tenant, mechanism,
// operations and scopes under a snapshot, not one per connection (a
// thousand idle connections of one key held a thousand copies of it:
// issue 23.5, idle pairs). The sessions of one API key share its
// identity too (auth.Identity, never changed once made).

// viewsMax bounds the shared views: past it a view is built for its
// session alone (a token's scopes are the issuer's to choose).
const viewsMax = 4096

// views are the shared views and API-key identities of the snapshot snap.
type views struct {
	mu   sync.Mutex
	snap *configs.Snapshot
	m    map[string]*decide.View
	keys map[string]*auth.Identity // by key id
	// names: the broker names of a cluster's clients, by cluster and
	// listener (brokers.go)
	names map[brokersKey]*brokerNames
}

type brokersKey struct {
	cluster string
	tls     bool
}

// reset starts the snapshot's own (on the caller's lock).
func (vs *views) reset(snap *configs.Snapshot) {
	if vs.snap != snap {
		vs.snap, vs.m, vs.keys = snap, map[string]*decide.View{}, map[string]*auth.Identity{}
		vs.names = map[brokersKey]*brokerNames{}
	}
}

// identity returns the identity the sessions of id's API key share under
// snap (the same key id in one snapshot is the same entry: the same
// identity); id itself for the other mechanisms (a certificate's or a
// token's holds what is its own).
func (env *Env) identity(snap *configs.Snapshot, id *auth.Identity) *auth.Identity {
	if id == nil || id.Mechanism != configs.MechAPIKey {
		return id
	}
	vs := &env.views
	vs.mu.Lock()
	defer vs.mu.Unlock()
	vs.reset(snap)
	if shared := vs.keys[id.Principal]; shared != nil {
		return shared
	}
	if len(vs.keys) < viewsMax {
		vs.keys[id.Principal] = id
	}
	return id
}

// view returns the view of id on cluster under snap, its admin scopes set
// (nil: no operation of the cluster admits the identity). Never change
// what it returns: other sessions read it.
func (env *Env) view(snap *configs.Snapshot, cluster *configs.Cluster, id *auth.Identity) *decide.View {
	key := cluster.Name + "\x00" + id.Tenant + "\x00" + string(id.Mechanism) + "\x00" +
		strings.Join(id.Ops, "\x01") + "\x00" + strings.Join(id.Scopes, "\x01")
	vs := &env.views
	vs.mu.Lock()
	defer vs.mu.Unlock()
	vs.reset(snap)
	if v, ok := vs.m[key]; ok {
		return v
	}
	v := decide.NewView(snap, cluster, id.Tenant, id.Mechanism, id.Ops)
	if v != nil {
		v.SetAdminScopes(id.Scopes)
	}
	if len(vs.m) < viewsMax {
		vs.m[key] = v
	}
	return v
}

// brokers returns the broker names the sessions of cluster share under
// snap, for the TLS listener's clients or the plaintext ports' (L1, L2).
func (env *Env) brokers(snap *configs.Snapshot, cluster *configs.Cluster, tls bool) *brokerNames {
	vs := &env.views
	vs.mu.Lock()
	defer vs.mu.Unlock()
	vs.reset(snap)
	k := brokersKey{cluster.Name, tls}
	b := vs.names[k]
	if b == nil {
		b = &brokerNames{env: env, cluster: cluster, up: env.Upstream(cluster.Upstream), tls: tls}
		vs.names[k] = b
	}
	return b
}
