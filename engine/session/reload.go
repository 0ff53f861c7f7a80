package session

import (
	"context"
	"sync"
	"time"

	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/configs"
)

// Revoke judges every open session again on snap, the configuration now
// in force (S2): a key removed or rebound, a certificate removed or
// rebound, is revoked: its connection is closed at its next request. Then
// the OAUTHBEARER sessions' tokens are verified again with oauth, the
// issuers in force.
func (env *Env) Revoke(ctx context.Context, snap *configs.Snapshot, oauth *auth.OAuth) {
	loops := env.Loops()
	var wg sync.WaitGroup
	for _, l := range loops {
		wg.Add(1)
		if err := l.Run("reload", func() {
			defer wg.Done()
			for cl := range l.clients {
				if cl.auth.state == stAuthed && cl.auth.revoked == "" {
					cl.auth.revoked = auth.Revocation(cl.auth.ident, snap)
				}
			}
		}); err != nil {
			wg.Done()
		}
	}
	wg.Wait()
	env.reverifyTokens(ctx, loops, snap, oauth)
}

// reverifyTokens verifies every open OAUTHBEARER session's token again with
// the issuers in force (S2): an issuer removed, an audience changed, a key
// withdrawn, another principal behind it — the session is revoked. The
// checks run off the loops (key fetches may block), then the verdicts are
// handed back to each session's loop.
func (env *Env) reverifyTokens(ctx context.Context, loops []*Loop, snap *configs.Snapshot, v *auth.OAuth) {
	type job struct {
		l     *Loop
		cl    *Client
		id    *auth.Identity
		cause string
	}
	var mu sync.Mutex
	var jobs []*job
	var wg sync.WaitGroup
	for _, l := range loops {
		l := l
		wg.Add(1)
		if err := l.Run("reload", func() {
			defer wg.Done()
			for cl := range l.clients {
				if cl.auth.state == stAuthed && cl.auth.ident != nil && cl.auth.ident.Mechanism == configs.MechOAuth && cl.auth.revoked == "" {
					mu.Lock()
					jobs = append(jobs, &job{l: l, cl: cl, id: cl.auth.ident})
					mu.Unlock()
				}
			}
		}); err != nil {
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
		if err := j.l.Run("reload", func() {
			defer wg.Done()
			if !j.cl.closed && j.cl.auth.revoked == "" && j.cl.auth.ident == j.id {
				j.cl.auth.revoked = j.cause
			}
		}); err != nil {
			wg.Done()
		}
	}
	wg.Wait()
}
