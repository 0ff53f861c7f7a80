package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// runDensity runs bench/cmd/density once per BENCH_DENSITY_N level, each on
// a freshly started gateway (so that the memory before is the same for
// every level), and writes density.md.
func (h *harness) runDensity() {
	t0 := time.Now()
	records := envInt("BENCH_DENSITY_RECORDS", 200000)
	var rows []map[string]string
	for _, n := range h.densityN {
		h.startGateway()
		time.Sleep(time.Second)
		h.say("density: %d idle authenticated connection pairs (gateway pid %d)", n, h.gwPID())
		args := []string{filepath.Join(h.bin, "density"), "-addr", h.gwBoot, "-user", h.keyID,
			"-pid", strconv.Itoa(h.gwPID()), "-metrics", "http://" + h.admin + "/metrics",
			"-n", strconv.Itoa(n), "-records", strconv.Itoa(records)}
		out, err := h.run(fmt.Sprintf("density-%d", n), []string{"DENSITY_PASS=" + h.key}, args...)
		kv := map[string]string{"n": strconv.Itoa(n)}
		for _, l := range strings.Split(out, "\n") {
			if rest, ok := strings.CutPrefix(l, "DENSITY "); ok {
				if k, v, ok := strings.Cut(rest, "="); ok {
					kv[k] = v
				}
			}
		}
		// broker side: its established connections on its port
		kv["gateway_alive"] = strconv.FormatBool(h.gatewayAlive())
		rows = append(rows, kv)
		if err != nil {
			h.say("density %d: %v\n%s", n, err, tail(out, 2000))
		} else {
			h.say("density %d: %s", n, strings.TrimSpace(grepPrefix(out, "density:")))
		}
		if !h.gatewayAlive() {
			data, _ := os.ReadFile(h.gwLog)
			h.say("the gateway died during the density run of %d:\n%s", n, tail(string(data), 4000))
		}
		h.stopGateway()
	}
	var b strings.Builder
	fmt.Fprintln(&b, "Each level on a freshly started gateway. A pair: one client connection authenticated (SASL PLAIN) that sent one Metadata request, so the gateway also holds its own broker connection; then idle.")
	fmt.Fprintln(&b, "RSS per pair: (VmRSS after − VmRSS before) / pairs. Idle: the gateway's CPU time and the times its threads were scheduled in (context switches), a second, from their schedstat over 5 s with the pairs open and idle. Heap: go_memstats_heap_inuse_bytes, same difference. Producer: franz-go through the gateway, 1 KiB, acks=all, while the pairs are open and after they are closed.")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| pairs asked | opened | alive after 5 s | gateway fds | RSS before → after MiB | RSS per pair | heap in use per pair | stacks per pair | goroutines | producer MiB/s with pairs open | p99 ms | producer MiB/s alone | p99 ms | GC cycles during the loaded run | STW per cycle µs (mean) | longest pause µs ≤ | idle: CPU ms/s · switches/s |")
	fmt.Fprintln(&b, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	kib := func(v string) string {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return "–"
		}
		return fmt.Sprintf("%.1f KiB", x/1024)
	}
	mibOf := func(v string) string {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return "–"
		}
		return fmt.Sprintf("%.1f", x/1024)
	}
	get := func(kv map[string]string, k string) string {
		if v, ok := kv[k]; ok {
			return v
		}
		return "–"
	}
	for _, kv := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s → %s | %s → %s | %s | %s | %s | %s → %s | %s | %s | %s | %s | %s | %s | %s | %s · %s |\n",
			kv["n"], get(kv, "opened"), get(kv, "alive_after_settle"), get(kv, "fds_before"), get(kv, "fds_after"),
			mibOf(kv["rss_before_kib"]), mibOf(kv["rss_after_kib"]),
			kib(kv["rss_per_conn_bytes"]), kib(kv["heap_inuse_per_conn_bytes"]), kib(kv["stack_inuse_per_conn_bytes"]),
			get(kv, "goroutines_before"), get(kv, "goroutines_after"),
			get(kv, "producer_mib_s_loaded"), get(kv, "producer_p99_ms_loaded"),
			get(kv, "producer_mib_s_alone"), get(kv, "producer_p99_ms_alone"),
			get(kv, "gc_count_loaded"), get(kv, "gc_pause_mean_us_loaded"), get(kv, "gc_pause_max_us_loaded"),
			get(kv, "idle_cpu_ms_per_s"), get(kv, "idle_switches_per_s"))
		for _, k := range []string{"open_error", "producer_error", "producer_error_idle"} {
			if v, ok := kv[k]; ok {
				fmt.Fprintf(&b, "\n%s pairs: %s: %s\n", kv["n"], k, v)
			}
		}
	}
	must(os.WriteFile(filepath.Join(h.out, "density.md"), []byte(b.String()), 0o644))
	fmt.Println()
	fmt.Println(b.String())
	h.gatewayErrors()
	h.say("density: %.0f s", time.Since(t0).Seconds())
}

func grepPrefix(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
