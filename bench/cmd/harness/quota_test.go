package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flexway/flexway/configs"
)

// The quota part's configurations load: the quotas (and server.counters)
// are in force in the variants, absent in the no-quota gateway, and the
// variants listen on their own ports.
func TestQuotaVariantsLoad(t *testing.T) {
	h := &harness{broker: "127.0.0.1:29192", firstNodeID: 1}
	dir := t.TempDir()
	files := map[string]string{
		"asyncapi.yaml": contract,
		"api-keys.yaml": "keys: []\n",
		"off.yaml":      h.gatewayYAML(29102, "127.0.0.1:29466", "", ""),
		"on.yaml":       h.gatewayYAML(29105, "127.0.0.1:29467", quotasFar, ""),
		"redis.yaml":    h.gatewayYAML(29108, "127.0.0.1:29468", quotasFar, "  counters: { store: \"redis://127.0.0.1:29479/0\", sync: 1s }\n"),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	load := func(name string) *configs.Snapshot {
		t.Helper()
		s, err := configs.Load(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return s
	}
	if q := load("off.yaml").Listener.Quotas; q != nil && (q.Client != nil || q.Tenant != nil) {
		t.Errorf("the no-quota gateway has quotas: %+v", q)
	}
	for _, name := range []string{"on.yaml", "redis.yaml"} {
		s := load(name)
		q := s.Listener.Quotas
		if q == nil || q.Client == nil || q.Tenant == nil {
			t.Fatalf("%s: quotas %+v, want client and tenant", name, q)
		}
		for _, r := range []*configs.Rates{q.Client, q.Tenant} {
			if r.ProducerByteRate < 1<<30 || r.ConsumerByteRate < 1<<30 || r.RequestRate < 1000000 {
				t.Errorf("%s: rates %+v: want every rate far above a run's", name, r)
			}
		}
		if c := s.File.Server.Counters; (name == "redis.yaml") != (c != nil && c.Store != "") {
			t.Errorf("%s: server.counters %+v", name, c)
		}
	}
	if !strings.Contains(files["on.yaml"], "from: 29105, to: 29107 }, first_node_id: 1") {
		t.Errorf("the quota gateway's ports:\n%s", files["on.yaml"])
	}
}

// sumSeries adds a series' samples over its labels, and only that series.
func TestSumSeries(t *testing.T) {
	exp := `# HELP x
flexway_kafka_throttle_seconds_bucket{tenant="acme",le="0.1"} 3
flexway_kafka_throttle_seconds_count{tenant="acme",quota="request_rate"} 2
flexway_kafka_throttle_seconds_count{tenant="beta",quota="producer_byte_rate"} 5
flexway_kafka_throttle_seconds_count_other 7
flexway_kafka_throttle_seconds_sum{tenant="acme"} 0.5
`
	if got := sumSeries(exp, "flexway_kafka_throttle_seconds_count"); got != 7 {
		t.Errorf("sum = %v, want 7", got)
	}
	if got := sumSeries(exp, "flexway_nothing"); got != 0 {
		t.Errorf("absent series: %v, want 0", got)
	}
}

// The quota table pairs each variant's run with the no-quota run of the
// same repetition, and says "no" where the median ratio is past 5 %.
func TestQuotaTable(t *testing.T) {
	h := &harness{}
	gib := float64(1 << 30)
	add := func(p string, rep int, mibps, cpu float64) {
		h.results = append(h.results, result{scenario: "w", path: p, rep: rep, mibps: mibps, bytes: gib, hopCPU: cpu})
	}
	for rep, off := range []float64{100, 200, 300} {
		add(qOff, rep+1, off, 1.0)
		add(qOn, rep+1, off*0.99, 1.02)   // within 5 %
		add(qRedis, rep+1, off*0.90, 1.2) // not
	}
	md := quotaTable(h, []string{"w"}, []string{qOff, qOn, qRedis}, 3, []string{"1.0"}, []string{"note"})
	for _, want := range []string{
		"| w | flexway | 200 (100–300) | – | – | 1.000 (1.000–1.000) | – | – |",
		"| w | flexway+quotas | 198 (99–297) | 0.990 (0.990–0.990) | yes | 1.020 (1.020–1.020) | 1.020 (1.020–1.020) | yes |",
		"| w | flexway+quotas+redis | 180 (90–270) | 0.900 (0.900–0.900) | **no** | 1.200 (1.200–1.200) | 1.200 (1.200–1.200) | **no** |",
		"- note",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in\n%s", want, md)
		}
	}
}

// schedSeconds reads this process's run time at ns precision: it grows
// with work done, by about the CPU time spent.
func TestSchedSeconds(t *testing.T) {
	pid := os.Getpid()
	s0, c0 := schedSeconds(pid), cpuSeconds(pid)
	if s0 <= 0 {
		t.Fatalf("schedSeconds(self) = %v", s0)
	}
	x := 0
	for s := schedSeconds(pid); schedSeconds(pid)-s < 0.3; {
		for i := 0; i < 1e6; i++ {
			x += i
		}
	}
	ds, dc := schedSeconds(pid)-s0, cpuSeconds(pid)-c0
	if ds < 0.3 || dc < 0.1 || ds > dc+0.5 {
		t.Errorf("ran %.3f s by schedstat, %.2f s by stat (x %d)", ds, dc, x)
	}
}

// quotaPool pairs each run with the no-quota run of the same repetition in
// the same file, and pools the pairs of every file.
func TestQuotaPool(t *testing.T) {
	dir := t.TempDir()
	head := "scenario\tgateway\trun\tmib_s\tbytes\trequests\tcpu_sched_s\tcpu_utime_stime_s\tcpu_s_per_gib\tcpu_us_per_request\twall_s\n"
	row := func(v string, run int, mib, cpu float64) string {
		return fmt.Sprintf("w\t%s\t%d\t%.2f\t1\t1\t1\t1\t%.4f\t1\t1\n", v, run, mib, cpu)
	}
	a := head + row(qOff, 1, 100, 1) + row(qOn, 1, 90, 1.1) + row(qOff, 2, 200, 2) + row(qOn, 2, 200, 2)
	b := head + row(qOff, 1, 50, 1) + row(qOn, 1, 55, 0.9) // run 1 of another file: paired with its own
	var files []string
	for i, body := range []string{a, b} {
		f := filepath.Join(dir, fmt.Sprintf("%d.tsv", i))
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	md, err := quotaPool(files)
	if err != nil {
		t.Fatal(err)
	}
	// ratios: throughput 0.9, 1.0, 1.1 -> median 1.0; CPU 1.1, 1.0, 0.9 -> 1.0
	if want := "| w | flexway+quotas | 3 | 1.000 (0.900–1.000) | 1.000 (0.900–1.000) |"; !strings.Contains(md, want) {
		t.Errorf("missing %q in\n%s", want, md)
	}
}
