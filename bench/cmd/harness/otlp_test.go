package main

// The otlp part's configurations, its span count and its table (otlp.go),
// without a broker or a Jaeger.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flexway/flexway/configs"
)

// The part's three gateways load: no observability.otlp on the first, the
// endpoint, protocol and instance on the others with sampling_ratio 0 and
// the ratio; each on ports and an admin address of its own.
func TestOTLPVariantsLoad(t *testing.T) {
	h := &harness{broker: "127.0.0.1:29192", firstNodeID: 1}
	dir := t.TempDir()
	vs := otlpVariants(0.01, 29132, 29472)
	files := map[string]string{"asyncapi.yaml": contract, "api-keys.yaml": "keys: []\n"}
	for i, v := range vs {
		files[fmt.Sprint(i, ".yaml")] = h.otlpGatewayYAML(v, "http://127.0.0.1:29480", "http/protobuf")
		if i == 2 {
			files["grpc.yaml"] = h.otlpGatewayYAML(v, "http://127.0.0.1:29481", "grpc")
		}
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want := []struct {
		ratio    float64
		instance string
		port     string
		admin    string
	}{
		{-1, "", "from: 29132, to: 29134", "127.0.0.1:29472"},
		{0, "bench-otlp-0", "from: 29135, to: 29137", "127.0.0.1:29473"},
		{0.01, "bench-otlp-0.01", "from: 29138, to: 29140", "127.0.0.1:29474"},
	}
	for i, v := range vs {
		s, err := configs.Load(filepath.Join(dir, fmt.Sprint(i, ".yaml")))
		if err != nil {
			t.Fatalf("%s: %v", v.path, err)
		}
		o, w := s.File.Observability.OTLP, want[i]
		switch {
		case w.ratio < 0 && o != nil:
			t.Errorf("%s: observability.otlp %+v, want none", v.path, o)
		case w.ratio >= 0 && (o == nil || o.SamplingRatio != w.ratio || o.InstanceID != w.instance ||
			o.Endpoint != "http://127.0.0.1:29480" || o.Protocol != "http/protobuf"):
			t.Errorf("%s: observability.otlp %+v, want ratio %v, instance %s", v.path, o, w.ratio, w.instance)
		}
		if !strings.Contains(files[fmt.Sprint(i, ".yaml")], w.port) || s.File.Server.Admin == nil || s.File.Server.Admin.Address != w.admin {
			t.Errorf("%s: not on ports %s and admin %s:\n%s", v.path, w.port, w.admin, files[fmt.Sprint(i, ".yaml")])
		}
	}
	s, err := configs.Load(filepath.Join(dir, "grpc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if o := s.File.Observability.OTLP; o == nil || o.Protocol != "grpc" || o.Endpoint != "http://127.0.0.1:29481" {
		t.Errorf("grpc: observability.otlp %+v", o)
	}
	if p := parseParts("otlp"); !p["otlp"] || p["table"] || len(p) != 1 {
		t.Errorf("parseParts(otlp): %v", p)
	}
}

// countSpans counts the query API's spans by their process's
// service.instance.id, over traces and processes.
func TestCountSpans(t *testing.T) {
	body := `{"data":[
 {"spans":[{"processID":"p1"},{"processID":"p2"}],
  "processes":{"p1":{"serviceName":"flexway","tags":[{"key":"host.name","value":"x"},{"key":"service.instance.id","value":"bench-otlp-0.01"}]},
               "p2":{"serviceName":"flexway","tags":[{"key":"service.instance.id","value":"bench-otlp-0"}]}}},
 {"spans":[{"processID":"p1"},{"processID":"p1"},{"processID":"p3"}],
  "processes":{"p1":{"serviceName":"flexway","tags":[{"key":"service.instance.id","value":"bench-otlp-0.01"}]},
               "p3":{"serviceName":"flexway","tags":[]}}}],"total":0,"limit":0,"offset":0,"errors":null}`
	n, err := countSpans([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if n["bench-otlp-0.01"] != 3 || n["bench-otlp-0"] != 1 || n[""] != 1 || len(n) != 3 {
		t.Errorf("counts %v, want 3 of bench-otlp-0.01, 1 of bench-otlp-0, 1 without", n)
	}
	if _, err := countSpans([]byte("<html>")); err == nil {
		t.Error("no error on a body that is not the query API's")
	}
}

// The table pairs each OTLP gateway's rounds with the round of the gateway
// without otlp, and the span lines say when the sample is not what the
// ratio gives.
func TestOTLPTable(t *testing.T) {
	h := &harness{}
	vs := otlpVariants(0.01, 29132, 29472)
	gib := float64(1 << 30)
	for rep, off := range []float64{100, 200, 300} {
		for i, f := range []float64{1, 0.98, 0.95} {
			h.results = append(h.results, result{scenario: "w", path: vs[i].path, rep: rep + 1, mibps: off * f, bytes: gib, hopSched: 1 / f})
		}
	}
	notes := spanNotes(vs, map[string]int{"bench-otlp-0.01": 100, "stray": 2}, map[string]float64{"bench-otlp-0": 8000, "bench-otlp-0.01": 10000}, 1.5)
	md := otlpTable(h, []string{"w"}, vs, 3, []string{"1.0"}, notes)
	for _, want := range []string{
		"| w | flexway without otlp | none | 200 (100–300) | – | 1.000 (1.000–1.000) | – |",
		"| w | flexway+otlp 0 | sampling_ratio: 0 (metrics only) | 196 (98–294) | 0.980 (0.980–0.980) | 1.020 (1.020–1.020) | 1.020 (1.020–1.020) |",
		"| w | flexway+otlp 0.01 | sampling_ratio: 0.01 | 190 (95–285) | 0.950 (0.950–0.950) | 1.053 (1.053–1.053) | 1.053 (1.053–1.053) |",
		"flexway+otlp 0 (service.instance.id bench-otlp-0): Jaeger received 0 spans; 8000 requests",
		"x 0 = 0 expected: as sampled.",
		"flexway+otlp 0.01 (service.instance.id bench-otlp-0.01): Jaeger received 100 spans; 10000 requests",
		"x 0.01 = 100 expected: as sampled.",
		`spans of other instances: "stray": 2.`,
		"Jaeger's CPU time over the rounds: 1.50 s.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in\n%s", want, md)
		}
	}
	// 100 expected of 10,000 at 0.01: within 100 ± 40.8.
	for spans, want := range map[int]string{0: "**not as configured**", 59: "**far from the ratio**", 60: "as sampled",
		140: "as sampled", 141: "**far from the ratio**", 300: "**far from the ratio**"} {
		notes := spanNotes(vs, map[string]int{"bench-otlp-0.01": spans}, map[string]float64{"bench-otlp-0.01": 10000}, 0)
		if !strings.Contains(strings.Join(notes, "\n"), "0.01 = 100 expected: "+want) {
			t.Errorf("%d spans of 100 expected: want %q in\n%s", spans, want, strings.Join(notes, "\n"))
		}
	}
	notes = spanNotes(vs, map[string]int{"bench-otlp-0": 1}, map[string]float64{"bench-otlp-0.01": 400}, 0)
	if !strings.Contains(notes[0], "**not as configured**") {
		t.Errorf("a span from the sampling_ratio 0 gateway passed: %v", notes)
	}
	if !strings.Contains(notes[1], "x 0.01 = 4 expected: too few requests to judge") {
		t.Errorf("0 spans of 4 expected: %v", notes)
	}
}
