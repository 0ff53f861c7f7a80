package configs

import (
	"strings"
	"testing"
)

// I2, S2 (issue 24.7): an issuer's delegation bounds load as written, and
// malformed bounds are refused at load, each with its place.
func TestLoadDelegation(t *testing.T) {
	issuer := "      tenant_claim: org\n"
	s, errs := base().apply(t, edit{"flexway", issuer,
		issuer + "      delegation:\n        max_depth: 2\n        actors: [billing-batch, ci-runner]\n"}).load(t)
	if errs != "" {
		t.Fatalf("refused: %s", errs)
	}
	d := s.File.Auth.Issuers[0].Delegation
	if d == nil || d.MaxDepth != 2 || strings.Join(d.Actors, ",") != "billing-batch,ci-runner" {
		t.Fatalf("delegation loaded as %+v", d)
	}

	for _, tc := range []struct{ name, yaml, want string }{
		{"no depth", "      delegation: { actors: [ci-runner] }\n", "auth.issuers[0].delegation.max_depth: 0: the actors a token's act chain may hold, 1 to 8"},
		{"too deep", "      delegation: { max_depth: 9 }\n", "auth.issuers[0].delegation.max_depth: 9:"},
		{"an empty actor", "      delegation: { max_depth: 1, actors: [\"\"] }\n", "auth.issuers[0].delegation.actors[0]: empty"},
		{"an actor twice", "      delegation: { max_depth: 1, actors: [a, b, a] }\n", `auth.issuers[0].delegation.actors[2]: "a" is listed twice`},
		{"an unknown key", "      delegation: { max_depth: 1, chain: 2 }\n", "chain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := base().apply(t, edit{"flexway", issuer, issuer + tc.yaml}).load(t)
			if !strings.Contains(errs, tc.want) {
				t.Fatalf("refusal %q, want %q", errs, tc.want)
			}
		})
	}
}
