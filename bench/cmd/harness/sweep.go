package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// sweep runs kafka-producer-perf-test at an unlimited rate, acks=1, both
// paths, across the record sizes of the plot, then draws throughput.png
// (throughput and p99 latency, direct vs gateway) with gnuplot.
func (h *harness) sweep() {
	t0 := time.Now()
	sc := func(size int) string { return fmt.Sprintf("sweep produce %s acks=1, unlimited", sizeLabel(size)) }
	count := func(size int) int {
		n := h.plotMiB << 20 / size
		return min(max(n, 2000), 1000000)
	}
	h.say("record-size sweep: %v B, %d runs each (acks=1, unlimited rate)", h.sizes, h.plotRepeat)
	for rep := 1; rep <= h.plotRepeat; rep++ {
		for _, size := range h.sizes {
			for _, p := range order(rep, direct, gateway) {
				h.measure(sc(size), p, rep, func() (result, error) { return h.perfProducer(p, "1", size, count(size), -1) })
			}
		}
	}

	// sweep.dat: size, then for direct and gateway: MiB/s median min max, p99 median min max
	var dat strings.Builder
	fmt.Fprintln(&dat, "# size label d_mib d_mib_lo d_mib_hi g_mib g_mib_lo g_mib_hi d_p99 d_p99_lo d_p99_hi g_p99 g_p99_lo g_p99_hi records")
	var md strings.Builder
	fmt.Fprintf(&md, "kafka-producer-perf-test, acks=1, unlimited rate; median of %d runs (min–max).\n\n", h.plotRepeat)
	fmt.Fprintln(&md, "| record size | records | direct MiB/s | gateway MiB/s | gw/direct | direct p99 ms | gateway p99 ms | gw CPU s/GiB |")
	fmt.Fprintln(&md, "|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, size := range h.sizes {
		s := sc(size)
		mib := func(p string) []float64 { return h.pick(s, p, func(r result) float64 { return r.mibps }) }
		p99 := func(p string) []float64 { return h.pick(s, p, func(r result) float64 { return r.p99 }) }
		fmt.Fprintf(&dat, "%d \"%s\"", size, sizeLabel(size))
		for _, v := range [][]float64{mib(direct), mib(gateway), p99(direct), p99(gateway)} {
			lo, hi := minMax(v)
			fmt.Fprintf(&dat, " %.3f %.3f %.3f", median(v), lo, hi)
		}
		fmt.Fprintf(&dat, " %d\n", count(size))
		fmt.Fprintf(&md, "| %s | %d | %s | %s | %.2f | %s | %s | %s |\n", sizeLabel(size), count(size),
			spread(mib(direct), "%.1f"), spread(mib(gateway), "%.1f"), median(mib(gateway))/median(mib(direct)),
			spreadMS(p99(direct)), spreadMS(p99(gateway)), spread(h.pick(s, gateway, result.hopCPUPerGiB), "%.2f"))
	}
	datPath := filepath.Join(h.out, "sweep.dat")
	must(os.WriteFile(datPath, []byte(dat.String()), 0o644))
	must(os.WriteFile(filepath.Join(h.out, "sweep.md"), []byte(md.String()), 0o644))
	fmt.Println()
	fmt.Println(md.String())

	png := filepath.Join(h.out, "throughput.png")
	env, _ := os.ReadFile(filepath.Join(h.out, "env.txt"))
	title := fmt.Sprintf("flexway vs Apache Kafka direct: kafka-producer-perf-test, acks=1, unlimited rate (median of %d, bars: min-max)", h.plotRepeat)
	sub := strings.ReplaceAll(firstLineWith(string(env), "cpu:"), "\"", "")
	gp := fmt.Sprintf(`set terminal pngcairo size 1400,600 font "DejaVu Sans,11"
set output "%s"
set multiplot layout 1,2 title "%s\n{/*0.85 %s; %s}"
set logscale x 2
set xrange [60:170000]
set xtics ("100 B" 100, "1 KiB" 1024, "10 KiB" 10240, "100 KiB" 102400)
set xlabel "record size"
set grid ytics
set key top left
set title "throughput"
set ylabel "MiB/s (payload)"
set yrange [0:*]
plot "%s" using ($1/1.08):3:4:5 with yerrorbars lc rgb "#1f77b4" pt 7 ps 1.2 lw 1.5 title "direct", \
     "" using ($1/1.08):3 with lines lc rgb "#1f77b4" lw 2 notitle, \
     "" using ($1*1.08):6:7:8 with yerrorbars lc rgb "#d62728" pt 5 ps 1.2 lw 1.5 title "through flexway", \
     "" using ($1*1.08):6 with lines lc rgb "#d62728" lw 2 notitle
set title "p99 latency (unlimited rate: queueing included)"
set ylabel "p99 ms"
set logscale y
set yrange [*:*]
set key top left
plot "%s" using ($1/1.08):9:10:11 with yerrorbars lc rgb "#1f77b4" pt 7 ps 1.2 lw 1.5 title "direct", \
     "" using ($1/1.08):9 with lines lc rgb "#1f77b4" lw 2 notitle, \
     "" using ($1*1.08):12:13:14 with yerrorbars lc rgb "#d62728" pt 5 ps 1.2 lw 1.5 title "through flexway", \
     "" using ($1*1.08):12 with lines lc rgb "#d62728" lw 2 notitle
unset multiplot
`, png, title, strings.TrimSpace(strings.TrimPrefix(sub, "cpu:")), "Kafka "+envStr("KAFKA_VERSION", "?")+", same machine", datPath, datPath)
	gpPath := filepath.Join(h.out, "throughput.gp")
	must(os.WriteFile(gpPath, []byte(gp), 0o644))
	if out, err := exec.Command("gnuplot", gpPath).CombinedOutput(); err != nil {
		h.say("gnuplot failed: %v\n%s", err, out)
	} else if plotsToDocs() {
		docs := filepath.Join(h.root, "docs")
		_ = os.MkdirAll(docs, 0o755)
		if data, err := os.ReadFile(png); err == nil {
			must(os.WriteFile(filepath.Join(docs, "bench-throughput.png"), data, 0o644))
		}
		h.say("plot: %s (copied to docs/bench-throughput.png)", png)
	}
	h.say("sweep: %.0f s", time.Since(t0).Seconds())
}

func sizeLabel(size int) string {
	switch {
	case size >= 1024 && size%1024 == 0:
		return fmt.Sprintf("%d KiB", size/1024)
	default:
		return fmt.Sprintf("%d B", size)
	}
}

func firstLineWith(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// plotsToDocs says whether the plots are copied to docs/ (BENCH_PLOTS_TO_DOCS,
// 1 by default; make bench-table sets 0: its runs leave the tree as it was).
func plotsToDocs() bool { return os.Getenv("BENCH_PLOTS_TO_DOCS") != "0" }
