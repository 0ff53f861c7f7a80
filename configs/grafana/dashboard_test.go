// Package grafana holds no code: its test checks the shipped dashboard.
package grafana

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flexway/flexway/engine"
)

type panel struct {
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

var metricName = regexp.MustCompile(`\bflexway_[a-zA-Z0-9_]+\b`)

// exprs returns every panel's expressions, rows' panels included.
func exprs(t *testing.T, ps []panel) (out []string, titles []string) {
	for _, p := range ps {
		titles = append(titles, p.Title)
		if p.Type == "row" {
			o, ti := exprs(t, p.Panels)
			out, titles = append(out, o...), append(titles, ti...)
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	return out, titles
}

// Issue 10.3: the dashboard is valid JSON, shows what the issue lists, and
// every expression names only series the gateway exports (and parses, when
// promtool is here to say so).
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile("flexway.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("flexway.json: %v", err)
	}
	if d.Title == "" || d.UID == "" {
		t.Error("a dashboard without a title or a uid")
	}
	all, titles := exprs(t, d.Panels)
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			all = append(all, v.Definition)
		}
	}
	exported := map[string]bool{}
	for _, n := range engine.MetricNames() {
		exported[n] = true
	}
	for _, e := range all {
		names := metricName.FindAllString(e, -1)
		if len(names) == 0 {
			t.Errorf("%q names no metric of the gateway", e)
		}
		for _, n := range names {
			if !exported[n] {
				t.Errorf("%q: %s is not exported by the gateway", e, n)
			}
		}
	}
	joined := strings.ToLower(strings.Join(titles, "\n"))
	for _, want := range []string{"connections per tenant", "requests by decision", "refusals by cause", "throttle", "budget wait p95", "brokers"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no panel about %q", want)
		}
	}

	tool, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool not found: the expressions' syntax is not checked")
		return
	}
	// Each panel's expression as a recording rule, Grafana's variables
	// given values: promtool check rules parses them.
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	r := strings.NewReplacer("$__rate_interval", "5m", "$cluster", ".*", "$tenant", ".*")
	for i, e := range all {
		if strings.HasPrefix(e, "label_values(") {
			continue
		}
		fmt.Fprintf(&rules, "      - record: flexway:dashboard_%d\n        expr: %q\n", i, r.Replace(e))
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("the dashboard's expressions do not parse: %v\n%s", err, out)
	}
}
