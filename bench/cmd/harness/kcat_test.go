package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// kcat's input is whole records of 1 KiB, none holding a newline: its
// count and payload are what the row's bytes are.
func TestKcatInputCounted(t *testing.T) {
	h := &harness{work: t.TempDir()}
	f, in := h.kcatInput(1000, 1024)
	if in != (recordsFile{records: 1000, bytes: 1000 * 1024}) {
		t.Fatalf("kcat's input of 1000 records of 1 KiB counted as %+v", in)
	}
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 1000*1025 || data[len(data)-1] != '\n' {
		t.Fatalf("input file: %d bytes, want 1000 × (1024 + newline)", len(data))
	}
	// Written once: a second call gives the same file, counted.
	if f2, in2 := h.kcatInput(1000, 1024); f2 != f || in2 != in {
		t.Fatalf("second call: %s %+v", f2, in2)
	}
	// A last record without its newline counts; a short one is told.
	if got := countRecords([]byte("abc\ndef\ngh")); got != (recordsFile{records: 3, bytes: 8, short: 1}) {
		t.Fatalf("countRecords: %+v", got)
	}
}

// A run's figures are the input's payload over kcat's seconds; a record
// not delivered, or an input that is not whole records of the size, fails
// the run; librdkafka's passing errors are counted in the note.
func TestParseKcatProduce(t *testing.T) {
	in := recordsFile{records: 300000, bytes: 300000 * 1024}
	r, err := parseKcatProduce("", in, 1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.bytes != 300000*1024 || r.recs != 150000 || math.Abs(r.mibps-146.484375) > 1e-9 || !math.IsNaN(r.p99) || r.note != "" {
		t.Fatalf("parsed %+v; want 150000 rec/s, 146.48 MiB/s, 300000 KiB, no latency", r)
	}
	failed := "% Delivery failed for message: Broker: Unknown topic or partition\n% Delivery failed for message: Broker: Unknown topic or partition\n"
	if _, err := parseKcatProduce(failed, in, 1024, 2); err == nil || !strings.Contains(err.Error(), "2 of 300000 records not delivered") {
		t.Fatalf("undelivered records: err %v", err)
	}
	passing := "%4|1796578136.019|FAIL|rdkafka#producer-1| [thrd:x]: Disconnected\n% ERROR: Local: Broker transport failure: 127.0.0.1:29092/0: Disconnected\n"
	if r, err := parseKcatProduce(passing, in, 1024, 2); err != nil || r.note != "(librdkafka errors: 1)" {
		t.Fatalf("passing error: note %q, err %v", r.note, err)
	}
	for _, bad := range []recordsFile{{}, {records: 2, bytes: 2047, short: 1}, {records: 2, bytes: 2000}} {
		if _, err := parseKcatProduce("", bad, 1024, 2); err == nil {
			t.Errorf("input %+v passed", bad)
		}
	}
}

// Through the gateway kcat authenticates with the tenant's key, through
// the relay as the broker's user against Apache Kafka, and without SASL
// against kfake (librdkafka wants SaslHandshake v0) and direct.
func TestKcatConf(t *testing.T) {
	h := &harness{work: t.TempDir(), keyID: "bench-acme", key: "k3y", relayUser: "flexway", relayPass: "flexway-secret",
		broker: "127.0.0.1:29192", relayBoot: "127.0.0.1:29196", gwBoot: "127.0.0.1:29092"}
	read := func(f string) string {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	if c := read(h.kcatConfFor(gateway)); !strings.Contains(c, "sasl.username=bench-acme\n") || !strings.Contains(c, "sasl.password=k3y\n") ||
		!strings.Contains(c, "security.protocol=SASL_PLAINTEXT\nsasl.mechanisms=PLAIN\n") {
		t.Errorf("gateway's kcat properties:\n%s", c)
	}
	if c := read(h.kcatConfFor(relay)); !strings.Contains(c, "sasl.username=flexway\n") {
		t.Errorf("relay's kcat properties (Apache Kafka):\n%s", c)
	}
	if f := h.kcatConfFor(direct); f != "" {
		t.Errorf("direct has kcat properties %s", f)
	}
	h.brokerKind = brokerKfake
	if f := h.kcatConfFor(relay); f != "" {
		t.Errorf("relay against kfake has kcat properties %s", f)
	}
	args := kcatArgs(h.bootstrap(relay), "", "/tmp/in.txt")
	if want := []string{"kcat", "-b", "127.0.0.1:29196", "-P", "-t", "perf", "-l", "/tmp/in.txt"}; !slices.Equal(args, want) {
		t.Errorf("kcat args %v, want %v", args, want)
	}
	args = kcatArgs(h.bootstrap(gateway), filepath.Join(h.work, "g.properties"), "/tmp/in.txt")
	if args[2] != "127.0.0.1:29092" || args[len(args)-2] != "-F" {
		t.Errorf("kcat args through the gateway %v", args)
	}
	if got := kcatVersionOf("kcat - Apache Kafka producer and consumer tool\nVersion 1.7.1 (JSON, Transactions, librdkafka 2.0.2 builtin.features=gzip)\n"); got != "kcat 1.7.1, librdkafka 2.0.2" {
		t.Errorf("kcatVersionOf: %q", got)
	}
}

// The kcat row is in both tables, after franz-go's producer, with a cell
// for each relaying path (ratio to direct paired by run, CPU s/GiB).
func TestTableKcatRow(t *testing.T) {
	h := &harness{repeat: 2}
	gib := float64(1 << 30)
	for rep := 1; rep <= 2; rep++ {
		for _, sc := range []string{scFranzProduce, scKcatProduce} {
			h.results = append(h.results,
				result{scenario: sc, path: direct, rep: rep, recs: 1, mibps: 200, p50: nan, p99: nan},
				result{scenario: sc, path: gateway, rep: rep, recs: 1, mibps: 180, bytes: gib, hopCPU: 0.4 + float64(rep)/10, hopHWM: 40 << 10, p50: nan, p99: nan},
				result{scenario: sc, path: relay, rep: rep, recs: 1, mibps: 190, bytes: gib, hopCPU: 0.3, hopHWM: 4 << 10, p50: nan, p99: nan})
		}
	}
	if sc := h.scenarios(); !slices.Equal(sc, []string{scFranzProduce, scKcatProduce}) {
		t.Fatalf("scenarios %v", sc)
	}
	s := h.summaryTable()
	if want := "| " + scKcatProduce + " | 200 (200–200) | 0.90 (0.90–0.90) · 0.55 · 40 MiB | 0.95 (0.95–0.95) · 0.30 · 4 MiB |"; !strings.Contains(s, want) {
		t.Errorf("summary lacks %q:\n%s", want, s)
	}
	d := h.table()
	for _, p := range []string{direct, relay, gateway} {
		if !strings.Contains(d, "| "+scKcatProduce+" | "+p+" |") {
			t.Errorf("detail lacks the kcat row on %s:\n%s", p, d)
		}
	}
}
