package session

// The upstreams in force as the loops read them: one immutable Fleet,
// replaced whole by the engine at its start and at a reload (S1).

import (
	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/upstream"
)

// Fleet is the upstreams in force and what the clusters read from them:
// immutable once stored (Env.SetFleet); a reload that adds an upstream,
// changes one's brokers or removes one stores a new Fleet, so the loops
// read it without a lock.
type Fleet struct {
	Upstreams map[string]*upstream.Upstream
	Versions  map[string]*decide.Versions // by cluster
	// SameCluster: an upstream refused because an earlier one reaches the
	// same physical cluster under another prefix (U3) -> that earlier one.
	SameCluster map[string]string
}

// NewFleet is an empty Fleet.
func NewFleet() *Fleet {
	return &Fleet{Upstreams: map[string]*upstream.Upstream{}, Versions: map[string]*decide.Versions{}, SameCluster: map[string]string{}}
}

// Clone copies f's maps (their values are shared), for a new Fleet.
func (f *Fleet) Clone() *Fleet {
	n := NewFleet()
	for k, v := range f.Upstreams {
		n.Upstreams[k] = v
	}
	for k, v := range f.Versions {
		n.Versions[k] = v
	}
	for k, v := range f.SameCluster {
		n.SameCluster[k] = v
	}
	return n
}

// Fleet returns the upstreams in force; never nil. Read it, never change it.
func (env *Env) Fleet() *Fleet { return env.fleet.Load() }

// SetFleet puts f in force: the next dial, the next session read it.
func (env *Env) SetFleet(f *Fleet) { env.fleet.Store(f) }

// Upstream returns the upstream name in force (nil: none).
func (env *Env) Upstream(name string) *upstream.Upstream { return env.fleet.Load().Upstreams[name] }

// versions returns cluster's versions in force.
func (env *Env) versions(cluster string) *decide.Versions { return env.fleet.Load().Versions[cluster] }
