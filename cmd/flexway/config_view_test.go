package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
)

// configYAML is the quickstart with quotas, a quota policy, the audit and
// a shared counter store: what /config must say (issue 24.6). rate is the
// client's producer_byte_rate, decisions the audit's.
func configYAML(t *testing.T, base int, store, rate, decisions string) string {
	t.Helper()
	cfg, err := os.ReadFile("../../configs/quickstart/flexway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := strings.NewReplacer("from: 19092, to: 19095", fmt.Sprintf("from: %d, to: %d", base, base+3),
		"127.0.0.1:9464", fmt.Sprintf("127.0.0.1:%d", base+4),
		"  kafka:\n    plaintext:", "  kafka:\n    quotas:\n      client: { producer_byte_rate: "+rate+", consumer_byte_rate: 2MiB }\n"+
			"      tenant: { producer_byte_rate: 4MiB, request_rate: 500 }\n      window: 2s\n      max_throttle: 5s\n      quota: plans\n    plaintext:",
	).Replace(string(cfg))
	return c + "  counters:\n    store: \"" + store + "\"\n    sync: 2s\n" +
		"policies:\n  definitions:\n    plans: { type: quota, config: { limits: { day: 1000, month: 20000 } } }\n" +
		"audit:\n  decisions: " + decisions + "\n  topic_key: \"a-topic-key-kept-secret\"\n" +
		"observability:\n  kafka:\n    closures: false\n  otlp:\n" +
		fmt.Sprintf("    endpoint: \"http://flexway:otlp-secret@127.0.0.1:%d/otlp?token=otlp-secret\"\n    sampling_ratio: 0.01\n", base+4)
}

// getConfig reads /config at port.
func getConfig(t *testing.T, port int) (map[string]any, string) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/config", port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("/config is not JSON: %v\n%s", err, body)
	}
	return v, string(body)
}

// at reads a path of keys in a decoded /config ("quotas", "client", ...).
func at(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// O4, issue 24.6: /config lists the quotas, the policies, the counter
// store and the audit in force, through the built binary, and again after
// a reload that changes them; never a secret.
func TestConfigSaysWhatRuns(t *testing.T) {
	bin := buildFlexway(t)
	redis := testkit.StartRedis(t)
	dir := quickstartFiles(t)
	base := testkit.FreePorts(t, 5)
	write := func(rate, decisions string) {
		if err := os.WriteFile(filepath.Join(dir, "flexway.yaml"), []byte(configYAML(t, base, redis.URL(), rate, decisions)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("1MiB", "refusals")
	gw := startFlexway(t, bin, dir)
	gw.waitHealthz(base + 4)
	cfg, body := getConfig(t, base+4)
	checkConfig(t, cfg, body, 1<<20, "refusals", redis.URL())

	write("3MiB", "all")
	gw.signal(syscall.SIGHUP)
	gw.waitLog("configuration reloaded", 10*time.Second)
	cfg, body = getConfig(t, base+4)
	checkConfig(t, cfg, body, 3<<20, "all", redis.URL())
	gw.waitLog("otlp export on", 10*time.Second)
	gw.stop()
	if logs := gw.stdout.String() + gw.stderr.String(); strings.Contains(logs, "otlp-secret") {
		t.Errorf("the OTLP endpoint's credentials are logged:\n%s", logs)
	}
}

// checkConfig checks what /config says against what flexway.yaml holds.
func checkConfig(t *testing.T, cfg map[string]any, body string, rate float64, decisions, store string) {
	t.Helper()
	want := map[string]any{
		"quotas.client.producer_byte_rate":    rate,
		"quotas.client.consumer_byte_rate":    float64(2 << 20),
		"quotas.tenant.producer_byte_rate":    float64(4 << 20),
		"quotas.tenant.request_rate":          float64(500),
		"quotas.window":                       "2s",
		"quotas.max_throttle":                 "5s",
		"quotas.quota":                        "plans",
		"policies.plans.type":                 "quota",
		"policies.plans.limits.day":           float64(1000),
		"policies.plans.limits.month":         float64(20000),
		"counters.store":                      storeName(store),
		"counters.sync":                       "2s",
		"audit.decisions":                     decisions,
		"audit.topic_key":                     "set",
		"observability.kafka.closures":        false,
		"observability.otlp.sampling_ratio":   0.01,
		"observability.otlp.protocol":         "http/protobuf",
		"observability.otlp.metrics_interval": "1m0s",
	}
	for path, v := range want {
		if got := at(cfg, strings.Split(path, ".")...); got != v {
			t.Errorf("/config %s = %v, want %v", path, got, v)
		}
	}
	if strings.Contains(body, "a-topic-key-kept-secret") || strings.Contains(body, "otlp-secret") {
		t.Errorf("/config shows the audit's topic key or the OTLP endpoint's credentials:\n%s", body)
	}
	if e, _ := at(cfg, "observability", "otlp", "endpoint").(string); !strings.HasPrefix(e, "http://127.0.0.1:") || !strings.HasSuffix(e, "/otlp") {
		t.Errorf("/config observability.otlp.endpoint = %q", e)
	}
}

// The counter store is named without its credentials, whatever the form
// of its URL.
func TestStoreNameKeepsNoSecret(t *testing.T) {
	for in, want := range map[string]string{
		"redis://:s3cret@10.0.0.5:6379/2":          "redis://10.0.0.5:6379/2",
		"rediss://user:s3cret@redis.internal:6380": "rediss://redis.internal:6380",
		"redis://10.0.0.5:6379?password=s3cret":    "redis://10.0.0.5:6379",
		"s3cret":                                   "(not a URL)",
		"redis-sentinel://:s3cret@s1:26380,s2/mymaster/1?sentinel_password=s3cret": "redis-sentinel://s1:26380,s2:26379/mymaster",
		"redis-cluster://u:s3cret@n1:7000,n2":                                      "redis-cluster://n1:7000,n2:6379",
		"redis-cluster://u:s3cret@n1:7000/2":                                       "(not a URL)",
	} {
		if got := storeName(in); got != want || strings.Contains(got, "s3cret") {
			t.Errorf("storeName(%q) = %q, want %q", in, got, want)
		}
	}
}
