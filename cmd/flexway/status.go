package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"html/template"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/flexway/flexway/engine"
)

// The admin endpoint (O4): /metrics, /healthz, /config, and / the status
// page (issue 10.7): per virtual cluster and tenant, what /metrics says,
// read from the same series at each request; one HTML page without an
// external asset, refreshed by the browser every 10 s.

// adminHandler serves the admin endpoint of e: GET and HEAD only (readOnly).
func adminHandler(e *engine.Engine) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		e.Metrics().WritePrometheus(w)
		metrics.WriteProcessMetrics(w)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("/config", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(boundsInForce(e.Snapshot()))
	})
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		e.Metrics().WritePrometheus(&buf)
		st := readStatus(&buf)
		st.Now = time.Now().UTC().Format(time.RFC3339)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		_ = statusPage.Execute(w, st)
	})
	return readOnly(mux)
}

// tenantRow is one (cluster, tenant) of the page.
type tenantRow struct {
	Cluster, Tenant             string
	Connections                 float64
	Mechanisms                  string
	Allowed, Refused, Throttled float64
	Causes                      string // refusals by cause
	ProducedBytes, FetchedBytes float64
	ThrottleP95                 string
	Waited, Closed              float64
	WaitP95                     string
	causes, mechs               map[string]float64
	throttle, wait              map[float64]float64 // le -> count
}

type upstreamRow struct {
	Cluster, Broker string
	OK, Failed      float64
}

type status struct {
	Now       string
	Tenants   []*tenantRow
	Upstreams []*upstreamRow
	Refused   []kv // connections refused by bound
	Closed    []kv // normal closures by cause
}

type kv struct {
	Key   string
	Value float64
}

// readStatus reads the exposition of the engine's series into the page's rows.
func readStatus(r io.Reader) *status {
	t := newStatusTally()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if name, l, v, ok := parseSample(sc.Text()); ok {
			t.add(name, l, v)
		}
	}
	return t.status()
}

// statusTally adds up the samples of one exposition by row of the page.
type statusTally struct {
	rows            map[[2]string]*tenantRow   // by (cluster, tenant)
	ups             map[[2]string]*upstreamRow // by (cluster, broker)
	refused, closed map[string]float64         // by bound, by cause
}

func newStatusTally() *statusTally {
	return &statusTally{
		rows:    map[[2]string]*tenantRow{},
		ups:     map[[2]string]*upstreamRow{},
		refused: map[string]float64{},
		closed:  map[string]float64{},
	}
}

// row returns the row of the sample's (cluster, tenant), made on first use.
func (t *statusTally) row(l map[string]string) *tenantRow {
	k := [2]string{l["cluster"], l["tenant"]}
	if t.rows[k] == nil {
		t.rows[k] = &tenantRow{Cluster: k[0], Tenant: k[1], causes: map[string]float64{}, mechs: map[string]float64{},
			throttle: map[float64]float64{}, wait: map[float64]float64{}}
	}
	return t.rows[k]
}

// add counts one sample (name, labels l, value v) in the row it belongs to;
// a series the page does not show is skipped.
func (t *statusTally) add(name string, l map[string]string, v float64) {
	switch name {
	case "flexway_kafka_connections":
		if v != 0 {
			r := t.row(l)
			r.Connections += v
			r.mechs[l["mechanism"]] += v
		}
	case "flexway_kafka_requests_total":
		t.row(l).addDecision(l, v)
	case "flexway_kafka_bytes_total":
		if l["direction"] == "produce" {
			t.row(l).ProducedBytes += v
		} else {
			t.row(l).FetchedBytes += v
		}
	case "flexway_kafka_tenant_budget_total":
		if l["outcome"] == "waited" {
			t.row(l).Waited += v
		} else {
			t.row(l).Closed += v
		}
	case "flexway_kafka_tenant_budget_wait_seconds_bucket", "flexway_kafka_throttle_seconds_bucket":
		t.addBucket(name, l, v)
	case "flexway_kafka_upstream_connections_total":
		t.addUpstream(l, v)
	case "flexway_kafka_connections_refused_total":
		t.refused[l["bound"]] += v
	case "flexway_kafka_connections_closed_total":
		t.closed[l["cause"]] += v
	}
}

// addDecision counts requests by decision, the refused ones by cause too.
func (r *tenantRow) addDecision(l map[string]string, v float64) {
	switch l["decision"] {
	case "allowed":
		r.Allowed += v
	case "refused":
		r.Refused += v
		if v != 0 {
			r.causes[l["cause"]] += v
		}
	case "throttled":
		r.Throttled += v
	}
}

// addBucket counts a bucket of the throttle or the budget wait histogram;
// a bucket whose le is not a number is skipped.
func (t *statusTally) addBucket(name string, l map[string]string, v float64) {
	le, err := strconv.ParseFloat(l["le"], 64)
	if err != nil {
		return
	}
	r := t.row(l)
	if name == "flexway_kafka_throttle_seconds_bucket" {
		r.throttle[le] += v
	} else {
		r.wait[le] += v
	}
}

// addUpstream counts a broker connection attempt by outcome.
func (t *statusTally) addUpstream(l map[string]string, v float64) {
	k := [2]string{l["cluster"], l["broker"]}
	if t.ups[k] == nil {
		t.ups[k] = &upstreamRow{Cluster: k[0], Broker: k[1]}
	}
	if l["outcome"] == "ok" {
		t.ups[k].OK += v
	} else {
		t.ups[k].Failed += v
	}
}

// status makes the page's rows: tenants with something to show and
// upstreams, each sorted by cluster then name, their cells summed up.
func (t *statusTally) status() *status {
	st := &status{}
	for _, r := range t.rows {
		if r.Connections == 0 && r.Allowed+r.Refused+r.Throttled == 0 && r.Waited+r.Closed == 0 {
			continue // a tenant seen once, quiet since
		}
		r.Causes = joinCounts(r.causes)
		r.Mechanisms = joinCounts(r.mechs)
		r.ThrottleP95 = quantile95(r.throttle)
		r.WaitP95 = quantile95(r.wait)
		st.Tenants = append(st.Tenants, r)
	}
	sort.Slice(st.Tenants, func(i, j int) bool {
		a, b := st.Tenants[i], st.Tenants[j]
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		return a.Tenant < b.Tenant
	})
	for _, u := range t.ups {
		st.Upstreams = append(st.Upstreams, u)
	}
	sort.Slice(st.Upstreams, func(i, j int) bool {
		a, b := st.Upstreams[i], st.Upstreams[j]
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		return a.Broker < b.Broker
	})
	st.Refused, st.Closed = sortedKV(t.refused), sortedKV(t.closed)
	return st
}

// parseSample reads one line `name{k="v",…} value` of the exposition.
func parseSample(line string) (name string, labels map[string]string, v float64, ok bool) {
	if line == "" || line[0] == '#' {
		return "", nil, 0, false
	}
	sp := strings.LastIndexByte(line, ' ')
	if sp < 0 {
		return "", nil, 0, false
	}
	v, err := strconv.ParseFloat(line[sp+1:], 64)
	if err != nil {
		return "", nil, 0, false
	}
	head := line[:sp]
	labels = map[string]string{}
	if i := strings.IndexByte(head, '{'); i >= 0 && strings.HasSuffix(head, "}") {
		name = head[:i]
		// The engine's label values hold no quote or comma (engine.labelValue).
		for _, pair := range strings.Split(head[i+1:len(head)-1], ",") {
			k, val, found := strings.Cut(pair, "=")
			if found {
				labels[k] = strings.Trim(val, `"`)
			}
		}
	} else {
		name = head
	}
	return name, labels, v, true
}

func joinCounts(m map[string]float64) string {
	var parts []string
	for _, e := range sortedKV(m) {
		parts = append(parts, e.Key+" "+strconv.FormatFloat(e.Value, 'f', -1, 64))
	}
	return strings.Join(parts, ", ")
}

func sortedKV(m map[string]float64) []kv {
	out := make([]kv, 0, len(m))
	for k, v := range m {
		out = append(out, kv{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// quantile95 is histogram_quantile(0.95) over cumulative buckets since the
// start, "" without an observation.
func quantile95(b map[float64]float64) string {
	les := make([]float64, 0, len(b))
	for le := range b {
		les = append(les, le)
	}
	sort.Float64s(les)
	if len(les) < 2 || !math.IsInf(les[len(les)-1], 1) || b[les[len(les)-1]] == 0 {
		return ""
	}
	rank := 0.95 * b[les[len(les)-1]]
	i := sort.Search(len(les)-1, func(i int) bool { return b[les[i]] >= rank })
	if i == len(les)-1 {
		return "> " + fmtSeconds(les[len(les)-2])
	}
	start, count := 0.0, b[les[i]]
	if i > 0 {
		start = les[i-1]
		count -= b[les[i-1]]
		rank -= b[les[i-1]]
	}
	return fmtSeconds(start + (les[i]-start)*(rank/count))
}

func fmtSeconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(10 * time.Microsecond).String()
}

var statusPage = template.Must(template.New("status").Funcs(template.FuncMap{
	"n": func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="10">
<title>flexway status</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.5em; }
table { border-collapse: collapse; } td, th { padding: .25em .7em; border-bottom: 1px solid #ddd; text-align: right; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; }
.bad { color: #b00; font-weight: bold; } .muted { color: #888; }
</style>
</head>
<body>
<h1>flexway status</h1>
<p class="muted">Counts since the start of this replica, read from /metrics at {{.Now}}; the page refreshes every 10 s.</p>

<h2>Tenants</h2>
{{if .Tenants}}<table id="tenants">
<tr><th class="l">Virtual cluster</th><th class="l">Tenant</th><th>Connections</th><th class="l">Mechanisms</th><th>Allowed</th><th>Throttled</th><th>Refused</th><th class="l">Refusals by cause</th><th>Produced bytes</th><th>Fetched bytes</th><th>Throttle p95</th><th>Budget waits</th><th>Budget closures</th><th>Budget wait p95</th></tr>
{{range .Tenants}}<tr><td class="l">{{.Cluster}}</td><td class="l">{{.Tenant}}</td><td>{{n .Connections}}</td><td class="l">{{.Mechanisms}}</td><td>{{n .Allowed}}</td><td>{{n .Throttled}}</td><td{{if .Refused}} class="bad"{{end}}>{{n .Refused}}</td><td class="l">{{.Causes}}</td><td>{{n .ProducedBytes}}</td><td>{{n .FetchedBytes}}</td><td>{{.ThrottleP95}}</td><td>{{n .Waited}}</td><td{{if .Closed}} class="bad"{{end}}>{{n .Closed}}</td><td>{{.WaitP95}}</td></tr>
{{end}}</table>{{else}}<p>No connection yet.</p>{{end}}

<h2>Upstreams</h2>
{{if .Upstreams}}<table id="upstreams">
<tr><th class="l">Virtual cluster</th><th class="l">Broker</th><th>Connections ok</th><th>Failed</th></tr>
{{range .Upstreams}}<tr><td class="l">{{.Cluster}}</td><td class="l">{{.Broker}}</td><td>{{n .OK}}</td><td{{if .Failed}} class="bad"{{end}}>{{n .Failed}}</td></tr>
{{end}}</table>{{else}}<p>No connection to a broker yet.</p>{{end}}

<h2>Connection bounds and closures</h2>
<table id="bounds">
<tr><th class="l">Refused by bound</th><th>Connections</th></tr>
{{range .Refused}}<tr><td class="l">{{.Key}}</td><td{{if .Value}} class="bad"{{end}}>{{n .Value}}</td></tr>
{{end}}<tr><th class="l">Normal closures by cause</th><th>Connections</th></tr>
{{range .Closed}}<tr><td class="l">{{.Key}}</td><td>{{n .Value}}</td></tr>
{{end}}</table>
<p class="muted">Series: <a href="/metrics">/metrics</a> · bounds in force: <a href="/config">/config</a></p>
</body>
</html>
`))
