package auth

import (
	"context"
	"slices"
	"time"

	"github.com/flexway/flexway/configs"
)

// Revocation says why an identity no longer stands in snap, the snapshot a
// reload put in force ("" if it does) (S2): a key removed or rebound, a
// certificate removed or rebound. A token is judged by OAuth.Recheck.
func Revocation(id *Identity, snap *configs.Snapshot) string {
	switch id.Mechanism {
	case configs.MechAPIKey:
		k := snap.Keys[id.Principal]
		switch {
		case k == nil:
			return "key removed from the store"
		case k.Hash != id.keyHash:
			return "key replaced in the store"
		case k.Tenant != id.Tenant:
			return "key bound to another tenant"
		case !sameSet(k.Operations, id.Ops):
			return "key bound to other operations"
		case !k.ExpiresAt.Equal(id.keyExpires):
			return "key's expiry changed"
		}
	case configs.MechMTLS:
		for _, c := range snap.Clients {
			if c.ID == id.Principal {
				if c.Subject != id.subject || c.Tenant != id.Tenant || !sameSet(c.Operations, id.Ops) {
					return "certificate rebound"
				}
				return ""
			}
		}
		return "certificate removed from auth.mtls.clients"
	}
	return ""
}

// Recheck verifies an OAUTHBEARER identity's token again with the issuers
// of snap, the snapshot a reload put in force (S2), and says why it no
// longer stands ("" if it does): an issuer removed, an audience changed, a
// key withdrawn, another principal or other operations behind it. v is the
// verifier in force, nil without issuers. It may fetch keys: never on a loop.
func (v *OAuth) Recheck(ctx context.Context, snap *configs.Snapshot, id *Identity, now time.Time) string {
	if v == nil {
		return "no issuer in force"
	}
	res := v.verifyToken(ctx, snap, id.token, now)
	switch {
	case res.ID == nil:
		return "token no longer accepted: " + res.Cause
	case res.ID.Principal != id.Principal || res.ID.Tenant != id.Tenant:
		return "token now names another principal"
	case !sameSet(res.ID.Ops, id.Ops):
		return "token now opens other operations"
	}
	return ""
}

// sameSet: a and b hold the same strings, whatever their order and repeats.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
