// Package prometheus holds no code: its tests check the shipped Prometheus
// files (the built-in alert rules, the seed's queries) with promtool.
package prometheus

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/flexway/flexway/engine"
)

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found: install Debian's prometheus package (scripts/install-deps.sh, run by make test)")
	}
	return p
}

// Issue 10.3: the built-in rules load, and each fires in its test case and
// stays silent in the others (flexway-rules.test.yaml).
func TestBuiltinRules(t *testing.T) {
	tool := promtool(t)
	for _, args := range [][]string{
		{"check", "rules", "flexway-rules.yaml"},
		{"test", "rules", "flexway-rules.test.yaml"},
	} {
		out, err := exec.Command(tool, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

var metricName = regexp.MustCompile(`\bflexway_[a-z_]+\b`)

// The rules, their test and the seed's queries name only series the
// gateway exports; the rules name the seed's two built-ins, and their
// alerts no tenant (by (cluster), never by (tenant)).
func TestRulesNameExportedMetrics(t *testing.T) {
	exported := map[string]bool{}
	for _, n := range engine.MetricNames() {
		exported[n] = true
	}
	for _, f := range []string{"flexway-rules.yaml", "flexway-rules.test.yaml", "seed-queries.promql"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		names := metricName.FindAllString(string(b), -1)
		if len(names) == 0 {
			t.Errorf("%s names no metric", f)
		}
		for _, n := range names {
			if !exported[n] {
				t.Errorf("%s: %s is not exported by the gateway", f, n)
			}
		}
	}
	b, err := os.ReadFile("flexway-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rules := string(b)
	for _, name := range []string{"alert: kafka-proxy-refusals", "alert: kafka-tenant-budget"} {
		if !strings.Contains(rules, name) {
			t.Errorf("rule %q missing", name)
		}
	}
	for _, line := range strings.Split(rules, "\n") {
		if strings.Contains(line, "by (") && !strings.HasPrefix(strings.TrimSpace(line), "#") &&
			!strings.Contains(line, "by (cluster)") && !strings.Contains(line, "sum by (tenant) (increase(flexway_kafka_tenant_budget_total") {
			t.Errorf("an aggregation that is not by cluster: %s", line)
		}
	}
}
