package decide

import (
	"testing"

	"github.com/flexway/flexway/configs"
)

// Issue 13.6, seed 001 "Les identités": an identity opens an operation only
// through a security alternative that names its mechanism: plain for API
// keys, oauth2 (its scopes matched at verification) for tokens, X509 for
// certificates. Three mechanisms against three alternatives.
func TestViewMechanismBindsAlternative(t *testing.T) {
	type alt struct {
		name string
		set  func(*configs.Operation)
	}
	alts := []alt{
		{"plain", func(op *configs.Operation) { op.Plain = true }},
		{"oauth2", func(op *configs.Operation) { op.OAuthScopes = [][]string{{"orders:write"}} }},
		{"X509", func(op *configs.Operation) { op.X509 = true }},
	}
	mechs := map[configs.Mechanism]string{
		configs.MechAPIKey: "plain",
		configs.MechOAuth:  "oauth2",
		configs.MechMTLS:   "X509",
	}
	for mech, opens := range mechs {
		for _, a := range alts {
			snap := fuzzSnapshot()
			op := &configs.Operation{ID: "only", Action: "send", Channel: "orders", Cluster: "shop", Upstream: "main"}
			a.set(op)
			snap.Operations["only"] = op
			v := NewView(snap, snap.Clusters["shop"], "acme", mech, []string{"only"})
			if want := a.name == opens; (v != nil) != want {
				t.Errorf("%s identity, operation with only a %s alternative: view %v, want opened=%v", mech, a.name, v != nil, want)
			}
		}
	}
	// An operation with several alternatives opens to each of their mechanisms,
	// and a view keeps only the operations its mechanism opens.
	snap := fuzzSnapshot()
	snap.Operations["acme-recv-orders"].Plain = false
	snap.Operations["acme-recv-orders"].OAuthScopes = [][]string{{"orders:read"}}
	v := NewView(snap, snap.Clusters["shop"], "acme", configs.MechAPIKey, []string{"acme-send-orders", "acme-recv-orders"})
	if v == nil || !v.CanSend || v.CanReceive || len(v.Ops) != 1 {
		t.Fatalf("API key bound to a plain send and an oauth2-only receive: %+v, want send only", v)
	}
	if v := NewView(snap, snap.Clusters["shop"], "acme", configs.MechOAuth, []string{"acme-send-orders", "acme-recv-orders"}); v == nil || v.CanSend || !v.CanReceive {
		t.Fatalf("token selecting both: %+v, want receive only", v)
	}
	if NewView(snap, snap.Clusters["shop"], "acme", configs.Mechanism("scram"), []string{"acme-send-orders"}) != nil {
		t.Fatal("a mechanism the listener does not verify opened an operation")
	}
}
