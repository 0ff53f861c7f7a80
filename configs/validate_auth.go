package configs

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// The auth section (seed 001 "Les identités", SPEC I1-I3): token issuers,
// the API key store, the client certificates of mtls.

// checkAuth checks auth: each issuer (a unique name, discovery or jwks,
// audience, tenant claim), the key store's "file:PATH", the mtls clients.
func (l *loader) checkAuth() {
	d, a := l.cfg, &l.f.Auth
	names := map[string]bool{}
	for i := range a.Issuers {
		is := &a.Issuers[i]
		p := path{"auth", "issuers", i}
		switch {
		case is.Name == "":
			d.errorf(p.at("name"), "required: the issuer's name")
		case names[is.Name]:
			d.errorf(p.at("name"), "%q names another issuer too", is.Name)
		}
		names[is.Name] = true
		switch {
		case is.Discovery != "" && is.JWKS != "":
			d.errorf(p.at("jwks"), "give discovery or jwks, not both")
		case is.Discovery == "" && is.JWKS == "":
			d.errorf(p, "required: discovery (the OpenID configuration URL) or jwks (\"file:/path\")")
		case is.Discovery != "":
			if err := CheckFetchURL(is.Discovery); err != nil {
				d.errorf(p.at("discovery"), "%v", err)
			}
		default:
			l.checkJWKS(is, p.at("jwks"))
		}
		if is.Audience == "" {
			d.errorf(p.at("audience"), "required: the audience the tokens must carry")
		}
		if is.TenantClaim == "" {
			d.errorf(p.at("tenant_claim"), "required: the claim that names the tenant (a token without a tenant is refused)")
		}
		if is.CAFile != "" {
			is.CAFile = l.resolve(is.CAFile)
			l.checkCAFile(is.CAFile, p.at("ca_file"))
		}
		if is.Delegation != nil {
			l.checkDelegation(is.Delegation, p.at("delegation"))
		}
	}
	if k := a.APIKeys; k != nil {
		if _, ok := strings.CutPrefix(k.Store, "file:"); !ok || k.Store == "file:" {
			d.errorf(path{"auth", "api_keys", "store"}, "required: \"file:PATH\", the key store (PATH relative to this file's folder)")
		}
	}
	if m := a.MTLS; m != nil {
		ids := map[string]bool{}
		for i, c := range m.Clients {
			p := path{"auth", "mtls", "clients", i}
			switch {
			case c.ID == "":
				d.errorf(p.at("id"), "required: the client's id")
			case ids[c.ID]:
				d.errorf(p.at("id"), "%q names another client too", c.ID)
			}
			ids[c.ID] = true
			if c.Subject == "" {
				d.errorf(p.at("subject"), "required: the certificate's subject, e.g. \"CN=billing-app\"")
			}
			// The tenant is not checked here: an identity whose tenant is not
			// letters, digits and '-' is refused at authentication (SPEC I4).
		}
	}
}

// checkDelegation checks an issuer's delegation bounds: a depth of 1 to
// MaxDelegationDepth, actors named once each.
func (l *loader) checkDelegation(dl *Delegation, p path) {
	d := l.cfg
	if dl.MaxDepth < 1 || dl.MaxDepth > MaxDelegationDepth {
		d.errorf(p.at("max_depth"), "%d: the actors a token's act chain may hold, 1 to %d (without delegation, tokens acting for another are refused)", dl.MaxDepth, MaxDelegationDepth)
	}
	seen := map[string]bool{}
	for i, a := range dl.Actors {
		switch {
		case a == "":
			d.errorf(p.at("actors").at(i), "empty: an actor is the sub of the token that acts")
		case seen[a]:
			d.errorf(p.at("actors").at(i), "%q is listed twice", a)
		}
		seen[a] = true
	}
}

// CheckFetchURL accepts an https URL, or http to a loopback host (tests and
// sidecars); auth applies it to discovery and JWKS URLs at fetch time too: a key set fetched in clear from elsewhere could be swapped.
func CheckFetchURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", s)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			return nil
		}
		return fmt.Errorf("%q: keys are fetched over https (http only to a loopback address)", s)
	}
	return fmt.Errorf("%q: https URL expected", s)
}

// checkJWKS resolves an issuer's "file:PATH" key set and checks that it
// holds at least one key.
func (l *loader) checkJWKS(is *Issuer, p path) {
	ref, ok := strings.CutPrefix(is.JWKS, "file:")
	if !ok || ref == "" {
		l.cfg.errorf(p, "%q: \"file:/path\" of a JSON Web Key Set expected", is.JWKS)
		return
	}
	name := l.resolve(ref)
	is.JWKS = "file:" + name
	data, err := readConfigFile(name)
	if err != nil {
		l.cfg.errorf(p, "cannot read %s: %s", name, unwrapPathError(err))
		return
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil || len(set.Keys) == 0 {
		l.cfg.errorf(p, "%s is not a JSON Web Key Set with at least one key", name)
	}
}
