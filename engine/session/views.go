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
// issue 23.5, idle pairs).

// viewsMax bounds the shared views: past it a view is built for its
// session alone (a token's scopes are the issuer's to choose).
const viewsMax = 4096

// views are the shared views of the snapshot snap.
type views struct {
	mu   sync.Mutex
	snap *configs.Snapshot
	m    map[string]*decide.View
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
	if vs.snap != snap {
		vs.snap, vs.m = snap, map[string]*decide.View{}
	}
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
