package engine

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/configs"
)

// Reload swaps the configuration in force (S1): the contract, identities,
// bounds and timeouts apply at each connection's next request. A new
// configuration that changes a start-only key, or that needs an upstream
// the engine did not start, is refused whole and the old one stays.
// Every open session is judged again (S2): a key removed or rebound, a
// certificate removed or rebound, is revoked — its connection is closed at
// its next request, and its reconnection is judged on the new configuration.
func (e *Engine) Reload(ctx context.Context, snap *configs.Snapshot) error {
	old := e.env.Snap.Load()
	if diff := snap.StartOnlyDiff(old); len(diff) > 0 {
		return fmt.Errorf("%w: %s", configs.ErrStartOnly, strings.Join(diff, ", "))
	}
	for _, cl := range snap.Clusters {
		u := e.env.Upstreams[cl.Upstream]
		if u == nil {
			return fmt.Errorf("%w: cluster %s needs upstream %s, which was not started: restart to apply it", configs.ErrStartOnly, cl.Name, cl.Upstream)
		}
		if !reflect.DeepEqual(u.Config().Brokers, snap.Upstreams[cl.Upstream].Brokers) {
			return fmt.Errorf("%w: upstreams.%s.brokers changed: restart to apply it", configs.ErrStartOnly, cl.Upstream)
		}
		if e.env.Versions[cl.Name] == nil {
			return fmt.Errorf("%w: cluster %s is new: restart to serve it", configs.ErrStartOnly, cl.Name)
		}
	}
	if err := e.updateUpstreams(snap); err != nil {
		return err
	}
	oauth := e.env.Sec.OAuth.Load()
	if !reflect.DeepEqual(old.File.Auth.Issuers, snap.File.Auth.Issuers) {
		oauth = nil
		if len(snap.File.Auth.Issuers) > 0 {
			v, err := auth.NewOAuth(ctx, snap)
			if err != nil {
				return err
			}
			oauth = v
		}
	}
	e.env.Sec.OAuth.Store(oauth)
	e.env.Snap.Store(snap)
	e.env.Signals.SetClosures(snap)
	e.env.Revoke(ctx, snap, oauth)
	e.log.Info("configuration reloaded", "path", snap.Path)
	return nil
}

// updateUpstreams reads again, at a reload, the TLS files and the SASL
// password of every upstream started: the next dial and the next renewal
// use them (configs.Load has read the password's file).
func (e *Engine) updateUpstreams(snap *configs.Snapshot) error {
	for name, u := range e.env.Upstreams {
		cfg := snap.Upstreams[name]
		if cfg == nil {
			continue
		}
		if err := u.Update(cfg); err != nil {
			return fmt.Errorf("%w: %w", ErrEngineConfig, err)
		}
	}
	return nil
}
