package configs

import (
	"strings"
	"testing"
)

// TestCountersStoreForms: server.counters.store takes one Redis, a primary
// Redis Sentinel names, a Redis Cluster (issue 36.5, SPEC Q3), and refuses
// a URL the store could not use at its file and line, with the reason and
// never the password.
func TestCountersStoreForms(t *testing.T) {
	with := func(t *testing.T, store string) fixture {
		return base().apply(t, edit{"flexway", "version: 1\n", "version: 1\nserver:\n  counters: { store: \"" + store + "\" }\n"})
	}
	for _, url := range []string{
		"redis://flexway:hunter2@redis:6379/0",
		"rediss://redis",
		"unix:///run/redis/redis.sock",
		"redis-sentinel://:hunter2@sentinel-0:26379,sentinel-1:26379,sentinel-2/flexway/0",
		"rediss-sentinel://sentinel-0/flexway?sentinel_password=hunter2",
		"redis-cluster://flexway:hunter2@redis-0:6379,redis-1:6379,redis-2:6379",
		"rediss-cluster://redis-0",
	} {
		s, errs := with(t, url).load(t)
		if s == nil || s.File.Server.Counters.Store != url {
			t.Errorf("%s refused:\n%s", url, errs)
		}
	}
	for _, tc := range []struct{ url, why string }{
		{"redis-sentinel://:hunter2@sentinel-0:26379", "a Sentinel URL names the primary's master name, then the database"},
		{"redis-sentinel://:hunter2@sentinel-0:26379,sentinel-1:x/flexway", "host 2 of 2: the port is not a number from 1 to 65535"},
		{"redis-cluster://:hunter2@redis-0/3", "a Redis Cluster has no database number"},
		{"redis-cluster://:hunter2@redis-0?read_timeout=soon", `invalid read_timeout duration: time: invalid duration "soon"`},
		{"sentinel://:hunter2@sentinel-0/flexway", `the scheme "sentinel" is none of these`},
		{"redis://:hunter2@[::1", "not a well-formed URL"},
	} {
		_, errs := with(t, tc.url).load(t)
		want := "flexway.yaml:3: server.counters.store: not a usable redis://, rediss://, unix://, redis-sentinel:// or redis-cluster:// URL: " + tc.why
		if !strings.Contains(errs, want) || strings.Contains(errs, "hunter2") {
			t.Errorf("%s:\n%s\nwant %q, never the password", tc.url, errs, want)
		}
	}
}
