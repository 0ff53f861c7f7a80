package engine

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine/session"
	"github.com/flexway/flexway/upstream"
)

// Reload swaps the configuration in force (S1): the contract, identities,
// bounds and timeouts apply at each connection's next request. A new
// configuration that changes a start-only key is refused whole and the old
// one stays. What the contract adds is served (upstreams.go):
//   - an upstream added, or one whose brokers or timeout changed, is
//     started (dialed, its brokers, versions and physical cluster id read,
//     U3 checked) before anything is adopted: unreachable, or reaching
//     the physical cluster of another upstream under other prefixes, the
//     reload is refused whole;
//   - a cluster added gets its plaintext ports, bound before anything is
//     adopted (a port taken refuses the reload), and its SNI names on the
//     TLS port (routed on the snapshot in force);
//   - a cluster removed loses its ports, and its connections are closed at
//     once (session.Env.CloseRemoved); an upstream no cluster uses any more
//     is stopped after.
//
// Every open session is judged again (S2): a key removed or rebound, a
// certificate removed or rebound, is revoked — its connection is closed at
// its next request, and its reconnection is judged on the new configuration.
func (e *Engine) Reload(ctx context.Context, snap *configs.Snapshot) error {
	old := e.env.Snap.Load()
	if diff := snap.StartOnlyDiff(old); len(diff) > 0 {
		return fmt.Errorf("%w: %s", configs.ErrStartOnly, strings.Join(diff, ", "))
	}
	plan, err := e.planFleet(ctx, snap)
	if err != nil {
		return err
	}
	added, gone := clusterChanges(old, snap)
	ports, err := e.acc.bindAll(clusterPorts(snap, added))
	if err != nil {
		plan.undo()
		return err
	}
	oauth, err := e.reloadOAuth(ctx, old, snap)
	if err == nil {
		err = e.updateUpstreams(snap, plan.next)
	}
	if err != nil {
		plan.undo()
		closeSpecs(ports)
		return err
	}
	e.env.SetFleet(plan.next) // before the snapshot: a cluster in force has its upstream
	e.env.Sec.OAuth.Store(oauth)
	e.env.Snap.Store(snap)
	e.env.Signals.SetClosures(snap)
	e.acc.adopt(ports)
	if len(gone) > 0 {
		e.acc.retire(gone)
		e.env.CloseRemoved(snap)
	}
	e.env.Revoke(ctx, snap, oauth)
	plan.retire(e.env)
	e.log.Info("configuration reloaded", "path", snap.Path)
	return nil
}

// clusterChanges names the clusters snap adds to old and those it removes.
func clusterChanges(old, snap *configs.Snapshot) (added, gone map[string]bool) {
	added, gone = map[string]bool{}, map[string]bool{}
	for name := range snap.Clusters {
		if old.Clusters[name] == nil {
			added[name] = true
		}
	}
	for name := range old.Clusters {
		if snap.Clusters[name] == nil {
			gone[name] = true
		}
	}
	return added, gone
}

// reloadOAuth returns the token verifier of snap: the one in force while
// auth.issuers stays the same, else a new one (its keys fetched).
func (e *Engine) reloadOAuth(ctx context.Context, old, snap *configs.Snapshot) (*auth.OAuth, error) {
	if reflect.DeepEqual(old.File.Auth.Issuers, snap.File.Auth.Issuers) {
		return e.env.Sec.OAuth.Load(), nil
	}
	if len(snap.File.Auth.Issuers) == 0 {
		return nil, nil
	}
	return auth.NewOAuth(ctx, snap)
}

// updateUpstreams reads again, at a reload, the TLS files and the SASL
// password of every upstream of f that was running: the next dial and the
// next renewal use them (configs.Load has read the password's file).
// Those started by this reload read them at their start.
func (e *Engine) updateUpstreams(snap *configs.Snapshot, f *session.Fleet) error {
	cur := e.env.Fleet()
	for name, u := range f.Upstreams {
		cfg := snap.Upstreams[name]
		if cfg == nil || cur.Upstreams[name] != u {
			continue
		}
		if err := u.Update(cfg); err != nil {
			return fmt.Errorf("%w: %w", ErrEngineConfig, err)
		}
	}
	return nil
}

// fleetPlan is a reload's upstreams: next (to put in force: those kept,
// those started), the ones it started (closed if the reload is refused),
// and the ones it leaves (stopped once adopted).
type fleetPlan struct {
	next    *session.Fleet
	started []*upstream.Upstream
	left    []string // names in next to drop once the removed clusters' connections are closed
	stopped []*upstream.Upstream
}

// undo stops what the plan started: the reload is refused.
func (p *fleetPlan) undo() {
	for _, u := range p.started {
		u.Close()
	}
}

// retire drops the upstreams no cluster uses any more from the fleet in
// force, then stops them and those replaced (an embedded one's brokers).
func (p *fleetPlan) retire(env *session.Env) {
	if len(p.left) > 0 {
		f := p.next.Clone()
		for _, name := range p.left {
			p.stopped = append(p.stopped, f.Upstreams[name])
			delete(f.Upstreams, name)
			delete(f.SameCluster, name)
		}
		env.SetFleet(f)
	}
	for _, u := range p.stopped {
		u.Close()
	}
}

// planFleet starts, for snap, the upstreams it adds and those whose
// brokers or timeout changed (a new Upstream: its first connection reads
// the brokers, versions and cluster id); one unreachable, or reaching the
// physical cluster of another under other prefixes (U3), refuses the
// reload: logged with the seed's line, what was started is stopped.
func (e *Engine) planFleet(ctx context.Context, snap *configs.Snapshot) (*fleetPlan, error) {
	cur := e.env.Fleet()
	p := &fleetPlan{next: cur.Clone()}
	served := servedUpstreams(snap)
	for _, name := range served {
		was := cur.Upstreams[name]
		if was != nil && !restarts(was.Config(), snap.Upstreams[name]) {
			continue
		}
		u, err := startUpstream(ctx, snap, name)
		if err != nil {
			p.undo()
			return nil, err
		}
		p.started = append(p.started, u)
		if was != nil {
			p.stopped = append(p.stopped, was)
		}
		p.next.Upstreams[name] = u
		delete(p.next.SameCluster, name)
	}
	for _, u := range p.started {
		if other := samePhysicalCluster(snap, p.next, u.Name()); other != "" {
			e.log.Error(session.MsgSameCluster, "upstream", u.Name(), "same_as", other, "cluster_id", u.ClusterID())
			p.undo()
			return nil, fmt.Errorf("%w: upstream %s reaches the physical cluster of upstream %s (cluster id %s) under other prefixes",
				ErrEngineUpstream, u.Name(), other, u.ClusterID())
		}
	}
	for name := range cur.Upstreams {
		if !slices.Contains(served, name) {
			p.left = append(p.left, name)
		}
	}
	setVersions(snap, p.next)
	return p, nil
}

// restarts reports whether an upstream running with was must be started
// anew for cfg: its brokers or its timeout changed (an embedded upstream's
// brokers are its own; its embedded section is start-only).
func restarts(was, cfg *configs.Upstream) bool {
	if cfg == nil || cfg.Embedded != nil {
		return false
	}
	return !slices.Equal(was.Brokers, cfg.Brokers) || was.Timeout != cfg.Timeout
}
