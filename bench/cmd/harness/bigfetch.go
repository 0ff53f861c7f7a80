package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The large answers of issue 11: a franz-go consumer fetching 50 MiB per
// request and 10 MiB per partition (bigFetch, a row of the table), and the
// relaying process's peak RSS against the partition fetch size (rssFetch,
// rss-fetch.md and its plot). Both read the topics big (direct, relay) and
// acme.big (the gateway's big), filled once by fillBig.

const (
	bigFetchMax  = 50 << 20 // fetch.max.bytes of the large-fetch consumer
	bigPartFetch = 10 << 20 // its max.partition.fetch.bytes
)

func (h *harness) scBigFetch() string {
	return fmt.Sprintf("franz-go consume 1 KiB, fetch 50 MiB / 10 MiB per partition, %s", mibLabel(h.bigMiB))
}

func (h *harness) scBigFetchJava() string {
	return fmt.Sprintf("perf-test consume 1 KiB, fetch 50 MiB / 10 MiB per partition, %s", mibLabel(h.bigMiB))
}

// bigFetchProps are the Java consumer's properties of the large fetches.
var bigFetchProps = fmt.Sprintf("fetch.max.bytes=%d\nmax.partition.fetch.bytes=%d\n", bigFetchMax, bigPartFetch)

func mibLabel(mib int) string {
	if mib >= 1024 && mib%1024 == 0 {
		return fmt.Sprintf("%d GiB", mib/1024)
	}
	return fmt.Sprintf("%d MiB", mib)
}

// fillBig writes enough 1 KiB records to big and acme.big, straight to the
// broker (franz-go, acks=1, 1 MiB batches; not measured), for the largest
// read of bigFetch and rssFetch.
func (h *harness) fillBig() {
	t0 := time.Now()
	mib := 0
	if h.parts["bigfetch"] {
		mib = h.bigMiB
	}
	if h.parts["rssfetch"] {
		mib = max(mib, h.rssMiB)
	}
	topics := []string{"big", "acme.big"}
	if h.parts["many"] {
		mib = max(mib, h.manyMiB)
		if !h.parts["bigfetch"] && !h.parts["rssfetch"] {
			topics = []string{"acme.big"} // through the gateway only
		}
	}
	n := mib << 10
	for _, t := range topics {
		if _, err := h.loadgen(direct, "produce", n, 1024, 0, 5*time.Millisecond,
			"-topic", t, "-acks", "1", "-timeout", "30m"); err != nil {
			die("filling %s: %v", t, err)
		}
	}
	h.say("topics %s: %s each of 1 KiB records (%d records), %.0f s", strings.Join(topics, " and "), mibLabel(mib), n, time.Since(t0).Seconds())
}

// bigConsume reads mib MiB of 1 KiB records of big from the start with
// franz-go, with the fetch sizes given.
func (h *harness) bigConsume(path string, mib, fetchMax, partFetch int) (result, error) {
	return h.loadgen(path, "consume", mib<<10, 1024, 0, 5*time.Millisecond, "-topic", "big",
		"-fetch-max-bytes", strconv.Itoa(fetchMax), "-partition-fetch-bytes", strconv.Itoa(partFetch), "-timeout", "30m")
}

// bigFetch is the large-fetch consumer on every path, BENCH_REPEAT times
// (and, with BENCH_BIG_JAVA=1, the consumer perf test with the same fetch
// sizes),
// the paths in turn; the gateway and the relay keep running from one run to
// the next (a heap that grows run after run shows in VmHWM).
func (h *harness) bigFetch() {
	t0 := time.Now()
	sc := h.scBigFetch()
	h.say("%s: %d runs, paths %v in turn", sc, h.repeat, paths)
	for rep := 1; rep <= h.repeat; rep++ {
		for _, p := range order(rep) {
			h.measure(sc, p, rep, func() (result, error) { return h.bigConsume(p, h.bigMiB, bigFetchMax, bigPartFetch) })
		}
		if !h.bigJava {
			continue
		}
		for _, p := range order(rep) {
			h.measure(h.scBigFetchJava(), p, rep, func() (result, error) {
				return h.perfConsumerOf(p, "big", h.bigMiB<<10, bigFetchProps)
			})
		}
	}
	h.say("large fetches: %.0f s", time.Since(t0).Seconds())
}

// rssFetch: peak RSS against max.partition.fetch.bytes (BENCH_RSS_FETCH_MIB),
// one franz-go consumer reading BENCH_RSS_MIB, through the gateway, the
// relay and the Go proxy. Each point runs on a freshly started process (so
// that VmHWM is that point's alone, not what an earlier and larger point
// left in the heap); fetch.max.bytes is 50 MiB, or the partition size if
// larger. Writes rss-fetch.md, rss-fetch.dat and rss-fetch.png (copied to
// docs/bench-rss-fetch.png).
func (h *harness) rssFetch() {
	t0 := time.Now()
	repeat := envInt("BENCH_RSS_REPEAT", 1)
	sc := func(mib int) string {
		return fmt.Sprintf("rss-fetch franz-go consume %s, fetch %d MiB per partition", mibLabel(h.rssMiB), mib)
	}
	h.say("peak RSS against the partition fetch size: %v MiB, %s read per point, %d run(s) each, a fresh process per run",
		h.rssFetchMiB, mibLabel(h.rssMiB), repeat)
	hops := []string{relay, gateway}
	if hasPath(goproxy) {
		hops = append(hops, goproxy)
	}
	for rep := 1; rep <= repeat; rep++ {
		for _, mib := range h.rssFetchMiB {
			for _, p := range order(rep, hops...) {
				switch p {
				case gateway:
					h.startGateway()
				case relay:
					h.startRelay()
				case goproxy:
					h.startGoProxy()
				}
				part := mib << 20
				h.measure(sc(mib), p, rep, func() (result, error) {
					return h.bigConsume(p, h.rssMiB, max(bigFetchMax, part), part)
				})
			}
		}
	}

	gp := hasPath(goproxy) // its columns come last, after the relay's and the gateway's
	var dat, md strings.Builder
	fmt.Fprint(&dat, "# partition_fetch_mib gw_hwm_mib gw_lo gw_hi relay_hwm_mib relay_lo relay_hi gw_mib_s relay_mib_s gw_cpu_s_gib relay_cpu_s_gib")
	if gp {
		fmt.Fprint(&dat, " goproxy_hwm_mib goproxy_lo goproxy_hi goproxy_mib_s goproxy_cpu_s_gib")
	}
	fmt.Fprintln(&dat)
	fmt.Fprintf(&md, "One franz-go consumer reading %s of 1 KiB records from the start of a 3-partition topic; fetch.max.bytes = max(50 MiB,\n", mibLabel(h.rssMiB))
	fmt.Fprintf(&md, "the partition size). VmHWM: peak RSS of the relaying process, started afresh for each point; median of %d run(s) (min–max).\n\n", repeat)
	fmt.Fprint(&md, "| max.partition.fetch.bytes | flexway VmHWM MiB | splice relay VmHWM MiB | flexway MiB/s | relay MiB/s | flexway CPU s/GiB | relay CPU s/GiB |")
	if gp {
		l := h.goProxyLabel()
		fmt.Fprintf(&md, " %s VmHWM MiB | %s MiB/s | %s CPU s/GiB |", l, l, l)
	}
	fmt.Fprintln(&md, "\n|--:|--:|--:|--:|--:|--:|--:|"+map[bool]string{true: "--:|--:|--:|"}[gp])
	for _, mib := range h.rssFetchMiB {
		s := sc(mib)
		hwm := func(p string) []float64 {
			return h.pick(s, p, func(r result) float64 { return r.hopHWM / 1024 })
		}
		mibs := func(p string) []float64 { return h.pick(s, p, func(r result) float64 { return r.mibps }) }
		cpu := func(p string) []float64 { return h.pick(s, p, result.hopCPUPerGiB) }
		fmt.Fprintf(&dat, "%d", mib)
		for _, v := range [][]float64{hwm(gateway), hwm(relay)} {
			lo, hi := minMax(v)
			fmt.Fprintf(&dat, " %.1f %.1f %.1f", median(v), lo, hi)
		}
		fmt.Fprintf(&dat, " %.1f %.1f %.3f %.3f", median(mibs(gateway)), median(mibs(relay)), median(cpu(gateway)), median(cpu(relay)))
		fmt.Fprintf(&md, "| %d MiB | %s | %s | %s | %s | %s | %s |", mib,
			spread(hwm(gateway), "%.0f"), spread(hwm(relay), "%.0f"),
			spread(mibs(gateway), "%.0f"), spread(mibs(relay), "%.0f"),
			spread(cpu(gateway), "%.2f"), spread(cpu(relay), "%.2f"))
		if gp {
			lo, hi := minMax(hwm(goproxy))
			fmt.Fprintf(&dat, " %.1f %.1f %.1f %.1f %.3f", median(hwm(goproxy)), lo, hi, median(mibs(goproxy)), median(cpu(goproxy)))
			lead := spread(hwm(goproxy), "%.0f")
			if f := h.failures(s, goproxy); f != "" {
				lead = strings.TrimPrefix(lead+" · "+f, "– · ")
			}
			fmt.Fprintf(&md, " %s | %s | %s |", lead, spread(mibs(goproxy), "%.0f"), spread(cpu(goproxy), "%.2f"))
		}
		fmt.Fprintln(&dat)
		fmt.Fprintln(&md)
	}
	md.WriteString(h.failureNotes(func(s string) bool { return strings.HasPrefix(s, "rss-fetch ") }))
	datPath := filepath.Join(h.out, "rss-fetch.dat")
	must(os.WriteFile(datPath, []byte(dat.String()), 0o644))
	must(os.WriteFile(filepath.Join(h.out, "rss-fetch.md"), []byte(md.String()), 0o644))
	fmt.Println()
	fmt.Println(md.String())

	png := filepath.Join(h.out, "rss-fetch.png")
	env, _ := os.ReadFile(filepath.Join(h.out, "env.txt"))
	sub := strings.TrimSpace(strings.TrimPrefix(strings.ReplaceAll(firstLineWith(string(env), "cpu:"), "\"", ""), "cpu:"))
	var tics []string
	for _, mib := range h.rssFetchMiB {
		tics = append(tics, fmt.Sprintf("\"%d MiB\" %d", mib, mib))
	}
	gpPlot := ""
	if gp {
		gpPlot = fmt.Sprintf(`, \
     "" using 1:12:13:14 with yerrorbars lc rgb "#1f77b4" pt 9 ps 1.2 lw 1.5 title "%s", \
     "" using 1:12 with lines lc rgb "#1f77b4" lw 2 notitle`, h.goProxyLabel())
	}
	script := fmt.Sprintf(`set terminal pngcairo size 1000,600 font "DejaVu Sans,11"
set output "%s"
set title "Peak RSS of the relaying process against the consumer's partition fetch size\n{/*0.85 one franz-go consumer reading %s, fetch.max.bytes max(50 MiB, partition); %s; Kafka %s}"
set logscale x 2
set logscale y 2
set xrange [%g:%g]
set xtics (%s)
set xlabel "max.partition.fetch.bytes"
set ylabel "VmHWM, MiB"
set grid xtics ytics
set key top left
plot "%s" using 1:2:3:4 with yerrorbars lc rgb "#d62728" pt 5 ps 1.2 lw 1.5 title "flexway", \
     "" using 1:2 with lines lc rgb "#d62728" lw 2 notitle, \
     "" using 1:5:6:7 with yerrorbars lc rgb "#2ca02c" pt 7 ps 1.2 lw 1.5 title "splice relay", \
     "" using 1:5 with lines lc rgb "#2ca02c" lw 2 notitle%s
`, png, mibLabel(h.rssMiB), sub, envStr("KAFKA_VERSION", "?"),
		float64(minInt(h.rssFetchMiB))/1.3, float64(maxInt(h.rssFetchMiB))*1.3, strings.Join(tics, ", "), datPath, gpPlot)
	gpPath := filepath.Join(h.out, "rss-fetch.gp")
	must(os.WriteFile(gpPath, []byte(script), 0o644))
	if out, err := exec.Command("gnuplot", gpPath).CombinedOutput(); err != nil {
		h.say("gnuplot failed: %v\n%s", err, out)
	} else if data, err := os.ReadFile(png); err == nil && plotsToDocs() {
		docs := filepath.Join(h.root, "docs")
		_ = os.MkdirAll(docs, 0o755)
		must(os.WriteFile(filepath.Join(docs, "bench-rss-fetch.png"), data, 0o644))
		h.say("plot: %s (copied to docs/bench-rss-fetch.png)", png)
	}
	h.say("rss against fetch size: %.0f s", time.Since(t0).Seconds())
}

func minInt(v []int) int {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

func maxInt(v []int) int {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
