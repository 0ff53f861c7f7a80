package engine

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/configs"
	"github.com/panjf2000/gnet/v2"
)

// Reload swaps the configuration in force (S1): the contract, identities,
// bounds and timeouts apply at each connection's next request. A new
// configuration that changes a start-only key, or that needs an upstream
// the engine did not start, is refused whole and the old one stays.
// Every open session is judged again (S2): a key removed or rebound, a
// certificate removed or rebound, is revoked — its connection is closed at
// its next request, and its reconnection is judged on the new configuration.
func (e *Engine) Reload(ctx context.Context, snap *configs.Snapshot) error {
	old := e.snap.Load()
	if diff := snap.StartOnlyDiff(old); len(diff) > 0 {
		return fmt.Errorf("%w: %s", configs.ErrStartOnly, strings.Join(diff, ", "))
	}
	for _, cl := range snap.Clusters {
		u := e.upstreams[cl.Upstream]
		if u == nil {
			return fmt.Errorf("%w: cluster %s needs upstream %s, which was not started: restart to apply it", configs.ErrStartOnly, cl.Name, cl.Upstream)
		}
		if !reflect.DeepEqual(u.Config().Brokers, snap.Upstreams[cl.Upstream].Brokers) {
			return fmt.Errorf("%w: upstreams.%s.brokers changed: restart to apply it", configs.ErrStartOnly, cl.Upstream)
		}
		if e.versions[cl.Name] == nil {
			return fmt.Errorf("%w: cluster %s is new: restart to serve it", configs.ErrStartOnly, cl.Name)
		}
	}
	if err := e.updateUpstreams(snap); err != nil {
		return err
	}
	oauth := e.sec.oauth.Load()
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
	e.sec.oauth.Store(oauth)
	e.snap.Store(snap)
	e.m.SetClosures(snap)
	e.loopsMu.Lock()
	loops := make([]*loop, 0, len(e.loops))
	for _, l := range e.loops {
		loops = append(loops, l)
	}
	e.loopsMu.Unlock()
	// Judge every open session before returning: a request that follows
	// the reload is judged on it. (Reload never runs on a loop.)
	var wg sync.WaitGroup
	for _, l := range loops {
		l := l
		wg.Add(1)
		if err := l.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			defer wg.Done()
			defer e.recoverConn(nil, "reload")
			for cl := range l.clients {
				if cl.auth.state == stAuthed && cl.auth.revoked == "" {
					cl.auth.revoked = auth.Revocation(cl.auth.ident, snap)
				}
			}
			return nil
		})); err != nil {
			wg.Done()
		}
	}
	wg.Wait()
	e.reverifyTokens(ctx, loops, snap, oauth)
	e.log.Info("configuration reloaded", "path", snap.Path)
	return nil
}

// reverifyTokens verifies every open OAUTHBEARER session's token again with
// the issuers in force (S2): an issuer removed, an audience changed, a key
// withdrawn, another principal behind it — the session is revoked. The
// checks run off the loops (key fetches may block), then the verdicts are
// handed back to each session's loop.
func (e *Engine) reverifyTokens(ctx context.Context, loops []*loop, snap *configs.Snapshot, v *auth.OAuth) {
	type job struct {
		l     *loop
		cl    *client
		id    *auth.Identity
		cause string
	}
	var mu sync.Mutex
	var jobs []*job
	var wg sync.WaitGroup
	for _, l := range loops {
		l := l
		wg.Add(1)
		if err := l.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			defer wg.Done()
			for cl := range l.clients {
				if cl.auth.state == stAuthed && cl.auth.ident != nil && cl.auth.ident.Mechanism == configs.MechOAuth && cl.auth.revoked == "" {
					mu.Lock()
					jobs = append(jobs, &job{l: l, cl: cl, id: cl.auth.ident})
					mu.Unlock()
				}
			}
			return nil
		})); err != nil {
			wg.Done()
		}
	}
	wg.Wait()
	if len(jobs) == 0 {
		return
	}
	sem := make(chan struct{}, 16)
	for _, j := range jobs {
		j := j
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			j.cause = v.Recheck(vctx, snap, j.id, time.Now())
			cancel()
		}()
	}
	wg.Wait()
	for _, j := range jobs {
		if j.cause == "" {
			continue
		}
		j := j
		wg.Add(1)
		if err := j.l.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			defer wg.Done()
			if !j.cl.closed && j.cl.auth.revoked == "" && j.cl.auth.ident == j.id {
				j.cl.auth.revoked = j.cause
			}
			return nil
		})); err != nil {
			wg.Done()
		}
	}
	wg.Wait()
}
