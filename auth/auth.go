// Package auth says who a Kafka client is (API keys over SASL PLAIN,
// OAUTHBEARER tokens with their issuers' key sets, client certificates
// declared in auth.mtls.clients) and whether that identity still stands
// after a reload; it holds no socket and never imports gnet.
//
// Concurrency: VerifyPlain, MatchCert and Revocation read only the snapshot
// they are given and are safe for concurrent use; OAuth keeps the issuers' key sets behind its own
// locks and is safe for any number of goroutines. Verifying may hash, read a
// file or fetch keys over the network: callers run it off the event loops
// (the engine's worker pool). An Identity is never changed once returned:
// it may be shared and compared by pointer.
package auth

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"time"

	"github.com/flexway/flexway/configs"
)

// Identity is a verified principal.
type Identity struct {
	Principal string // the key's id, the certificate's declared id, the token's sub
	Mechanism configs.Mechanism
	Tenant    string    // as the credential says: check it with configs.ValidTenant
	Ops       []string  // the operations it may use
	Expires   time.Time // the credential's end: expires_at, NotAfter, exp (zero: none)
	// Scopes are an OAUTHBEARER token's, sorted; they open administration (D8).
	Scopes []string
	// Actors are a token's act chain (RFC 8693), the current actor first:
	// who acts for the principal; audited, never the principal.
	Actors []string

	// What a reload compares (S2): the key's hash and expiry, the certificate's subject.
	keyHash    [32]byte
	keyExpires time.Time
	subject    string
	token      string // OAUTHBEARER: the JWT, verified again at each reload (S2); never logged, never leaves the package
}

// Result is a verdict: an identity, or why there is none.
type Result struct {
	ID    *Identity
	Cause string // why refused (never the secret)
	User  string // the user the credential names, for the log ("" if unread), bounded (BoundName)
}

// VerifyPlain checks a SASL PLAIN message against the key store (I1):
// "authzid NUL user NUL password", user = the key's id.
func VerifyPlain(snap *configs.Snapshot, msg []byte, now time.Time) Result {
	res := verifyPlain(snap, msg, now)
	res.User = BoundName(res.User)
	return res
}

func verifyPlain(snap *configs.Snapshot, msg []byte, now time.Time) Result {
	parts := bytes.SplitN(msg, []byte{0}, 3)
	if len(parts) != 3 {
		return Result{Cause: "malformed PLAIN message"}
	}
	authz, user, pass := parts[0], string(parts[1]), parts[2]
	if len(authz) > 0 && string(authz) != user {
		return Result{Cause: "PLAIN authorization id differs from the user", User: user}
	}
	k := snap.Keys[user]
	sum := sha256.Sum256(pass)
	if k == nil {
		// Compare anyway: the time taken says nothing of whether the id exists.
		var zero [32]byte
		subtle.ConstantTimeCompare(sum[:], zero[:])
		return Result{Cause: "unknown key", User: user}
	}
	if subtle.ConstantTimeCompare(sum[:], k.Hash[:]) != 1 {
		return Result{Cause: "key mismatch", User: user}
	}
	if !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt) {
		return Result{Cause: "expired key", User: user}
	}
	return Result{User: user, ID: &Identity{Principal: k.ID, Mechanism: configs.MechAPIKey, Tenant: k.Tenant, Ops: k.Operations, Expires: k.ExpiresAt, keyHash: k.Hash, keyExpires: k.ExpiresAt}}
}
