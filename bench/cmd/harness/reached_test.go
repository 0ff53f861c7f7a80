package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
)

// The gateway of the part carries the seed's quotas, and the contract's
// quota channel has the operations the part's keys are made for.
func TestReachedGatewayLoads(t *testing.T) {
	h := &harness{broker: "127.0.0.1:29192", firstNodeID: 1}
	dir := t.TempDir()
	for name, body := range map[string]string{
		"asyncapi.yaml": contract,
		"api-keys.yaml": "keys: []\n",
		"on.yaml":       h.gatewayYAML(29125, "127.0.0.1:29471", seedQuotas, ""),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := configs.Load(filepath.Join(dir, "on.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	q := s.Listener.Quotas
	if q == nil || q.Client == nil || q.Tenant == nil {
		t.Fatalf("quotas %+v", q)
	}
	if q.Client.ProducerByteRate != seedProduceRate || q.Client.ConsumerByteRate != seedConsumeRate || q.Tenant.ProducerByteRate != 2<<20 {
		t.Errorf("client %+v tenant %+v: not the seed's", q.Client, q.Tenant)
	}
	for _, op := range []string{"quotaSend", "quotaReceive", "perfSend"} {
		if s.Operations[op] == nil {
			t.Errorf("operation %s missing from the contract", op)
		}
	}
	if p := parseParts("quota,quota-reached"); !p["quota"] || !p["quota-reached"] || p["table"] {
		t.Errorf("parseParts: %v", p)
	}
}

// A meter's rate spans seconds 4 to 14 of its first bytes, and its first
// second is what came in [start, start+1s].
func TestMeterHeld(t *testing.T) {
	s := time.Unix(1000, 0)
	m := &meter{}
	m.add(s.Add(-time.Second), 0)
	m.add(s, 3<<20) // a burst at the start
	for i := 1; i <= 200; i++ {
		m.add(s.Add(time.Duration(i)*100*time.Millisecond), 100<<10) // 1000 KiB/s for 20 s
	}
	if got := m.firstSecond(); got != 3<<20+10*(100<<10) {
		t.Errorf("first second %v", got)
	}
	rate, span := m.held()
	if math.Abs(span-9.9) > 1e-6 || math.Abs(rate-1000<<10) > 1 {
		t.Errorf("held %v over %v s, want %v over 9.9 s (from its first bytes past the 4th second to its last)", rate, span, 1000<<10)
	}
	// Lumps of 1 MiB every 0.9 s: the rate between them, whatever lumps
	// the window holds.
	lumps := &meter{}
	for i := 0; i < 20; i++ {
		lumps.add(s.Add(time.Duration(i)*900*time.Millisecond), 1<<20)
	}
	if rate, _ := lumps.held(); math.Abs(rate-float64(1<<20)/0.9) > 1 {
		t.Errorf("lumps: %v MiB/s, want %v", rate/(1<<20), 1/0.9)
	}
	// A run that ended at its 8th second is measured from its 4th to its last bytes.
	short := &meter{ev: m.ev[:82]}
	if rate, span := short.held(); math.Abs(span-3.9) > 0.01 || math.Abs(rate-1000<<10) > 1 {
		t.Errorf("short run: %v over %v s", rate, span)
	}
	// One of a second: its whole run.
	tiny := &meter{}
	tiny.add(s, 1<<20)
	tiny.add(s.Add(500*time.Millisecond), 1<<20)
	if rate, span := tiny.held(); span != 0.5 || rate != 2<<20 {
		t.Errorf("tiny run: %v over %v s", rate, span)
	}
	if rate, _ := (&meter{}).held(); !math.IsNaN(rate) {
		t.Errorf("empty meter: %v", rate)
	}
}

func TestPercentile(t *testing.T) {
	var v []float64
	for i := 1; i <= 100; i++ {
		v = append(v, float64(i))
	}
	if p := percentile(v, 0.99); p != 99 {
		t.Errorf("p99 %v", p)
	}
	if p := percentile(v, 0.5); p != 50 {
		t.Errorf("p50 %v", p)
	}
	if p := percentile(v[:1], 0.99); p != 1 {
		t.Errorf("one: %v", p)
	}
	if !math.IsNaN(percentile(nil, 0.99)) {
		t.Error("none: not NaN")
	}
}

// harness client's lines: records read, acknowledged and requests.
func TestParseClientLines(t *testing.T) {
	ns := time.Unix(2000, 0).UnixNano()
	lines := []timedLine{
		{s: fmt.Sprintf("C %d 1024 0", ns)},
		{s: fmt.Sprintf("C %d 1024 0", ns+1e9)},
		{s: fmt.Sprintf("P %d 1024 2500 1", ns)},
		{s: fmt.Sprintf("Q %d 0 1500 0", ns)},
		{s: fmt.Sprintf("Q %d 1 700 0", ns)},
		{s: "garbage"},
	}
	read, acked, reqs, recs := parseClientLines(lines, 0)
	if read.total() != 2048 || acked.total() != 1024 {
		t.Errorf("read %v acked %v", read.total(), acked.total())
	}
	if len(reqs) != 1 || reqs[0].ms != 1.5 || len(recs) != 1 || recs[0].ms != 2.5 {
		t.Errorf("reqs %+v recs %+v", reqs, recs)
	}
	if _, _, f, _ := parseClientLines(lines, 1); len(f) != 1 || f[0].ms != 0.7 {
		t.Errorf("fetch requests %+v", f)
	}
}

// kafka-consumer-perf-test's detailed stats: a line each second with the
// MB read so far.
func TestParsePerfConsumerDetail(t *testing.T) {
	out := `time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
2026-12-05 10:00:01:000, 0, 4.0000, 4.0, 4096, 4096, 300, 700, 5.7, 5851
2026-12-05 10:00:02:000, 0, 6.0000, 2.0, 6144, 2048, 0, 1000, 2.0, 2048
2026-12-05 10:00:03:000, 0, 8.0000, 2.0, 8192, 2048, 0, 1000, 2.0, 2048
WARNING: something
`
	m := parsePerfConsumerDetail(out)
	if got := m.firstSecond(); math.Abs(got-4<<20) > 1 {
		t.Errorf("first second %v MiB", got/(1<<20))
	}
	if got := m.total(); math.Abs(got-8<<20) > 1 {
		t.Errorf("total %v MiB", got/(1<<20))
	}
	want := time.Date(2026, 12, 5, 10, 0, 0, 300e6, time.Local) // the first line's fetching began 700 ms before it
	if !m.start().Equal(want) {
		t.Errorf("start %v, want %v", m.start(), want)
	}
}

func TestParsePyLines(t *testing.T) {
	m, rtts, over := parsePyLines([]timedLine{{s: "E 1000.5 1024"}, {s: "E 1000.6 1024"}, {s: "R 1001.0 25000 30000"}, {s: "x"}})
	if m.total() != 2048 || len(rtts) != 1 || rtts[0].ms != 25 || over {
		t.Errorf("meter %v rtts %+v over %v", m.total(), rtts, over)
	}
	// Past librdkafka's 500 ms histogram the p99 reads 0: the max stands for it.
	_, rtts, over = parsePyLines([]timedLine{{s: "R 1001.0 0 1500000"}})
	if len(rtts) != 1 || rtts[0].ms != 1500 || !over {
		t.Errorf("rtts %+v over %v", rtts, over)
	}
}

// The neighbour's windows: each counts the records acknowledged in it.
func TestNeighbourWindows(t *testing.T) {
	s := time.Unix(3000, 0)
	acked := &meter{}
	var recs []latAt
	for i := 0; i < 46*100; i++ { // 100 records/s of 1 KiB for 46 s
		at := s.Add(time.Duration(i) * 10 * time.Millisecond)
		acked.add(at, 1024)
		ms := 2.0
		if d := at.Sub(s); d >= neighbourAStart && d < 33*time.Second {
			ms = 3.0
		}
		recs = append(recs, latAt{at, ms})
	}
	nb := &neighbourResult{rate: 100, gw: rOn}
	nbFill(nb, s, []nbWindow{{name: "alone", from: 2, to: 12}, {name: "beside", from: 13, to: 33}, {name: "after", from: 35, to: 45}}, acked, recs, recs)
	if len(nb.win) != 3 {
		t.Fatalf("%+v", nb)
	}
	a, w, f := nb.win[0], nb.win[1], nb.win[2]
	if a.p99 != 2 || w.p99 != 3 || f.p99 != 2 || a.n != 1000 || w.n != 2000 || f.n != 1000 {
		t.Errorf("%+v", nb.win)
	}
	if math.Abs(a.mib-100.0/1024) > 1e-9 || math.Abs(w.mib-100.0/1024) > 1e-9 {
		t.Errorf("throughput %v %v", a.mib, w.mib)
	}
	md := reachedTable(nil, []*neighbourResult{nb}, 3, nil, nil, nil)
	for _, want := range []string{"| p99 record ms | 2.00 | 3.00 | 2.00 | 1.500 | 1.500 |", "| globex | alone (s 2–12) | beside (s 13–33) | after (s 35–45) | ratio to before | ratio to after |",
		"under 10 %: **no**); its throughput by 0.0 %"} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in:\n%s", want, md)
		}
	}
	// The contrast through the gateway without quotas: no verdict of item 7.
	off := *nb
	off.gw = rOff
	md = reachedTable(nil, []*neighbourResult{nb, &off}, 3, nil, nil, nil)
	if strings.Count(md, "item 7") != 1 || !strings.Contains(md, "without quotas (no-quotas)") {
		t.Errorf("table:\n%s", md)
	}
}

// The table: a row per library and direction, the quota's runs against
// the no-quota gateway's CPU, failed runs left out and listed.
func TestReachedTable(t *testing.T) {
	var runs []reachedRun
	for rep := 1; rep <= 3; rep++ {
		runs = append(runs,
			reachedRun{lib: "franz-go", dir: "produce", gw: rOn, rep: rep, rate: float64(1<<20) * (0.98 + 0.01*float64(rep)), first: 2 << 20, p99: 900, cpu: 0.03, bytes: 18 << 20},
			reachedRun{lib: "franz-go", dir: "produce", gw: rOff, rep: rep, rate: nan, first: nan, p99: nan, cpu: 0.012, bytes: 18 << 20},
			reachedRun{lib: "kcat", dir: "consume", gw: rOn, rep: rep, rate: 3 << 20, first: 8 << 20, p99: nan, cpu: 0.05, bytes: 36 << 20})
	}
	runs = append(runs, reachedRun{lib: "kcat", dir: "consume", gw: rOff, rep: 1, err: "kcat: boom\nmore", cpu: 1, bytes: 1})
	md := reachedTable(runs, nil, 3, []string{"franz-go", "kcat"}, []string{"franz-go produce 1.2"}, []string{"a note"})
	for _, want := range []string{
		"| franz-go | produce | 1 MiB/s | 1.000 (0.990–1.010) | yes | 2.00 (2.00–2.00) | 900 (900–900) | 1.71 (1.71–1.71) | 0.683 (0.683–0.683) | 2.50 |",
		"| kcat | consume | 2 MiB/s | 3.000 (3.000–3.000) | **no** | 8.00 (8.00–8.00) | – | 1.42 (1.42–1.42) | – | – |",
		"| franz-go | consume | 2 MiB/s | – | – | – | – | – | – | – |",
		"- Failed (left out of the figures): kcat consume on no-quotas, run 1: kcat: boom",
		"- a note",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in:\n%s", want, md)
		}
	}
}

// BENCH_REACHED_LIBS=none: no library, the neighbour alone; the table
// then has no library rows.
func TestReachedLibList(t *testing.T) {
	if got := reachedLibList("none"); len(got) != 0 {
		t.Errorf("none: %v", got)
	}
	if got := reachedLibList(" franz-go, kcat ,"); strings.Join(got, "|") != "franz-go|kcat" {
		t.Errorf("%q", got)
	}
	md := reachedTable(nil, nil, 3, nil, nil, nil)
	if strings.Contains(md, "| client | direction |") || !strings.Contains(md, "BENCH_REACHED_LIBS=none") {
		t.Errorf("table:\n%s", md)
	}
}

// The floor's clients: direct (no SASL) on the broker's topics, acme's
// paced at the seed's held rates by default: the tenant's 2 MiB/s over
// three producers, 2 MiB/s each consumer; through a gateway, unpaced on
// the quota channel.
func TestNeighbourFloorArgs(t *testing.T) {
	t.Setenv("BENCH_NEIGHBOUR_FLOOR_PRODUCE_MIB_S", "")
	t.Setenv("BENCH_NEIGHBOUR_FLOOR_CONSUME_MIB_S", "")
	p := floorPace()
	if p.produce != 2 || p.consume != 2 {
		t.Errorf("default pace %+v", p)
	}
	t.Setenv("BENCH_NEIGHBOUR_FLOOR_PRODUCE_MIB_S", "1.92")
	if p := floorPace(); p.produce != 1.92 || p.consume != 2 {
		t.Errorf("pace %+v", p)
	}
	acme := []string{"reach-acme-1", "reach-acme-2", "reach-acme-3"}
	b, a := neighbourArgs("127.0.0.1:29192", &nbPace{produce: 2, consume: 2}, true, 512, 52, 21, "reach-globex", acme)
	if got := strings.Join(b, " "); got != "client -brokers 127.0.0.1:29192 -topic globex.quota -users reach-globex -produce -rate 512 -seconds 52 -direct" {
		t.Errorf("globex: %s", got)
	}
	if got := strings.Join(a, " "); got != "client -brokers 127.0.0.1:29192 -topic acme.quota -users reach-acme-1,reach-acme-2,reach-acme-3 -produce -consume -seconds 21 -direct -rate 682.667 -consume-rate 2048.000 -burst 1" {
		t.Errorf("acme: %s", got)
	}
	// The floor of a held client's shape: the same rates in lumps of 1,024
	// records (BENCH_NEIGHBOUR_FLOOR_BURST).
	t.Setenv("BENCH_NEIGHBOUR_FLOOR_BURST", "")
	if p := lumpPace(); p.burst != 1024 || p.produce != 1.92 {
		t.Errorf("lump pace %+v", p)
	}
	if _, a := neighbourArgs("127.0.0.1:29192", lumpPace(), true, 512, 52, 21, "reach-globex", acme); !strings.HasSuffix(strings.Join(a, " "), "-burst 1024") {
		t.Errorf("lumps: %s", strings.Join(a, " "))
	}
	// The arguments are harness client's (here with no client to run).
	if rc := clientRun(append(a[1:len(a):len(a)], "-brokers", "127.0.0.1:1", "-seconds", "0.01", "-produce=false", "-consume=false"), io.Discard, ""); rc != 0 {
		t.Errorf("harness client refused %v: rc %d", a[1:], rc)
	}
	// Through the splice relay: paced, with SASL (the broker's user).
	if b, a := neighbourArgs("127.0.0.1:29196", lumpPace(), false, 512, 52, 21, "flexway", acme); strings.Contains(strings.Join(append(b, a...), " "), "-direct") ||
		!strings.Contains(strings.Join(a, " "), "-topic acme.quota") || !strings.HasSuffix(strings.Join(a, " "), "-burst 1024") {
		t.Errorf("through the relay: %v %v", b, a)
	}
	b, a = neighbourArgs("127.0.0.1:29125", nil, false, 512, 52, 21, "reach-globex", acme)
	if got := strings.Join(append(b, a...), " "); strings.Contains(got, "-direct") || strings.Contains(got, "rate 6") ||
		strings.Contains(got, "-consume-rate") || strings.Count(got, "-topic quota ") != 2 {
		t.Errorf("through a gateway: %s", got)
	}
}

// The floor's table and the passes side by side: what share of the move
// through the seed-quotas gateway the floor accounts for.
func TestNeighbourFloorTable(t *testing.T) {
	mk := func(gw string, pace *nbPace, beside float64) *neighbourResult {
		return &neighbourResult{rate: 512, gw: gw, pace: pace, acme: 3, aProduce: 1.92, aConsume: 5.9, win: []nbWindow{
			{name: "alone, before acme", from: 6, to: 16, mib: 0.5, p50: 6, p99: 12, req: 1.2, n: 5120},
			{name: "beside acme", from: 17, to: 37, mib: 0.5, p50: 6, p99: beside, req: 9, n: 10240},
			{name: "alone, after acme", from: 39, to: 51, mib: 0.5, p50: 6, p99: 12, req: 0.8, n: 6144},
		}}
	}
	on, off, floor := mk(rOn, nil, 17), mk(rOff, nil, 667), mk(direct, &nbPace{produce: 2, consume: 2}, 14)
	md := reachedTable(nil, []*neighbourResult{on, off, floor}, 3, nil, nil, nil)
	for _, want := range []string{
		"The floor: the same without the gateway, acme paced at the held rates.",
		"acme's 3 producers at 2.000 MiB/s in all\n(682.7 records/s each",
		"- paced at 2.00 MiB/s produced in all, 6.00 MiB/s read in all (2.00 each).",
		"| direct, acme paced at the held rates | 1.92 | 5.90 | 0.500 | 0.500 | 0.500 | 12.0 | 14.0 | 12.0 | 1.167 | 1.167 | 1.20 | 9.00 |",
		"| through seed-quotas (acme held) | 1.92 | 5.90 |",
		"| through no-quotas (acme unheld) |",
		"- globex's p99 beside acme / alone before it: 1.167 direct with acme paced at the held rates (the floor), 1.417 through seed-quotas.",
		"the floor accounts for 40 % (+16.7 %); the rest, 3.00 ms of p99 beside acme",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in:\n%s", want, md)
		}
	}
	if strings.Count(md, "item 7") != 1 {
		t.Errorf("item 7's verdict: once, for the seed-quotas pass:\n%s", md)
	}
	// The relay's floor: the same lumps through the splice relay.
	md = reachedTable(nil, []*neighbourResult{on, floor, mk(relay, &nbPace{produce: 2, consume: 2, burst: 1024}, 15)}, 3, nil, nil, nil)
	for _, want := range []string{
		"The relay's floor: the same through the splice relay",
		"| through the splice relay, acme at the held rates in lumps of 1024 records | 1.92 | 5.90 |",
		"- The relay's floor (the same lumps through the splice relay, a kernel-only hop): 1.250 (12.00 → 15.00 ms). Past it, the gateway\n  adds +16.7 % of p99 (2.00 ms beside acme",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in:\n%s", want, md)
		}
	}
	// The floor as high as the gateway: nothing attributed to the gateway.
	md = reachedTable(nil, []*neighbourResult{on, mk(direct, &nbPace{produce: 2, consume: 2}, 18)}, 3, nil, nil, nil)
	if !strings.Contains(md, "past the floor, the gateway adds nothing measured here") {
		t.Errorf("table:\n%s", md)
	}
}
