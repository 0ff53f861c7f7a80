package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Many large-fetch consumers at once (issue 11, item 3): BENCH_MANY_N
// franz-go consumers (one loadgen process, one client each) fetching 50 MiB
// per request and 10 MiB per partition, each reading BENCH_MANY_MIB of
// acme.big from the start through a freshly started gateway. Recorded: the
// gateway's RSS when idle (before), its peak (VmHWM) during the run, the
// budgets in force (/config), and VmRSS every 5 s for BENCH_MANY_AFTER_S
// seconds after the consumers stop; many.md (the table), many-rss.tsv (every
// sample, and VmRSS each second during the run).

// manyFigures is what the many-consumers part measured.
type manyFigures struct {
	n, mib           int             // consumers, MiB each
	idleKiB          float64         // VmRSS before the run
	peakKiB          float64         // VmHWM during the run
	total, tenant    int64           // max_total_in_flight_bytes, max_tenant_in_flight_bytes in force
	perConn          int64           // max_in_flight_bytes
	after            map[int]float64 // seconds after the consumers stopped -> VmRSS KiB
	mibps, cpuPerGiB float64
	seconds          float64         // the run's wall time
	slowest          float64         // the slowest consumer's seconds
	clientNote       string          // the consumers' connections and failed reads (loadgen)
	heapIdle         float64         // go_memstats_heap_inuse_bytes before the run, bytes (0: not read)
	heapAfter        map[int]float64 // ... after the run, by seconds
}

// heapInuse reads go_memstats_heap_inuse_bytes from the gateway's /metrics
// (0 when it cannot).
func (h *harness) heapInuse() float64 {
	body, err := exposition(h.admin)
	if err != nil {
		return 0
	}
	return sumSeries(body, "go_memstats_heap_inuse_bytes")
}

func (h *harness) scMany() string {
	return fmt.Sprintf("%d franz-go consumers at once, fetch 50 MiB / 10 MiB per partition, %s each", h.manyN, mibLabel(h.manyMiB))
}

// gatewayBounds reads the bounds in force from the gateway's /config.
func (h *harness) gatewayBounds() (total, tenant, perConn int64) {
	resp, err := http.Get("http://" + h.admin + "/config")
	if err != nil {
		h.say("/config: %v", err)
		return 0, 0, 0
	}
	defer resp.Body.Close()
	var b struct {
		Total   int64 `json:"max_total_in_flight_bytes"`
		Tenant  int64 `json:"max_tenant_in_flight_bytes"`
		PerConn int64 `json:"max_in_flight_bytes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
		h.say("/config: %v", err)
	}
	return b.Total, b.Tenant, b.PerConn
}

// many runs the part on a freshly started gateway (left running).
func (h *harness) many() {
	t0 := time.Now()
	sc := h.scMany()
	h.startGateway()
	pid := h.gwPID()
	f := manyFigures{n: h.manyN, mib: h.manyMiB, after: map[int]float64{}, heapAfter: map[int]float64{}}
	f.total, f.tenant, f.perConn = h.gatewayBounds()
	tsv, err := os.Create(filepath.Join(h.out, "many-rss.tsv"))
	must(err)
	defer tsv.Close()
	fmt.Fprintln(tsv, "phase\tseconds\tvmrss_kib\theap_inuse_bytes")
	time.Sleep(3 * time.Second) // settled after the start
	f.idleKiB, f.heapIdle = statusKiB(pid, "VmRSS"), h.heapInuse()
	fmt.Fprintf(tsv, "idle\t0\t%.0f\t%.0f\n", f.idleKiB, f.heapIdle)
	h.say("%s: gateway idle RSS %.0f MiB; max_total_in_flight_bytes %s, max_tenant_in_flight_bytes %s, max_in_flight_bytes %s",
		sc, f.idleKiB/1024, bytesLabel(f.total), bytesLabel(f.tenant), bytesLabel(f.perConn))

	// VmRSS each second during the run (the peak itself is VmHWM).
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		s0 := time.Now()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				fmt.Fprintf(tsv, "run\t%.0f\t%.0f\t\n", time.Since(s0).Seconds(), statusKiB(pid, "VmRSS"))
			}
		}
	}()
	r := h.measure(sc, gateway, 1, func() (result, error) {
		return h.loadgen(gateway, "consume", h.manyMiB<<10, 1024, 0, 5*time.Millisecond, "-topic", "big",
			"-fetch-max-bytes", strconv.Itoa(bigFetchMax), "-partition-fetch-bytes", strconv.Itoa(bigPartFetch),
			"-clients", strconv.Itoa(h.manyN), "-timeout", envStr("BENCH_MANY_TIMEOUT", "10m"))
	})
	ended := time.Now()
	close(stop)
	<-sampled
	f.peakKiB, f.mibps, f.cpuPerGiB, f.seconds = r.hopHWM, r.mibps, r.hopCPUPerGiB(), r.wall
	f.slowest, f.clientNote = r.slowest, r.note

	// After: VmRSS every 5 s.
	for s := 5; s <= h.manyAfter; s += 5 {
		time.Sleep(time.Until(ended.Add(time.Duration(s) * time.Second)))
		if !h.gatewayAlive() {
			die("the gateway died %d s after %s", s, sc)
		}
		f.after[s], f.heapAfter[s] = statusKiB(pid, "VmRSS"), h.heapInuse()
		fmt.Fprintf(tsv, "after\t%d\t%.0f\t%.0f\n", s, f.after[s], f.heapAfter[s])
		h.say("  %3d s after: VmRSS %.0f MiB, Go heap in use %.0f MiB", s, f.after[s]/1024, f.heapAfter[s]/(1<<20))
	}
	md := manyTable(f)
	must(os.WriteFile(filepath.Join(h.out, "many.md"), []byte(md), 0o644))
	fmt.Println()
	fmt.Println(md)
	h.say("many consumers: %.0f s", time.Since(t0).Seconds())
}

// bytesLabel prints a budget in MiB or GiB ("?" when /config did not say).
func bytesLabel(b int64) string {
	if b <= 0 {
		return "?"
	}
	if b%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", b>>30)
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}

// manyTable is many.md: the table and the two claims against it.
func manyTable(f manyFigures) string {
	mib := func(kib float64) string { return fmt.Sprintf("%.0f MiB", kib/1024) }
	at := func(s int) string {
		if v, ok := f.after[s]; ok {
			return mib(v)
		}
		return "n/a"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d franz-go consumers at once (one loadgen process, a client each), fetch.max.bytes 50 MiB,\n", f.n)
	fmt.Fprintf(&b, "max.partition.fetch.bytes 10 MiB, each reading %s of 1 KiB records of a 3-partition topic from the\n", mibLabel(f.mib))
	fmt.Fprintf(&b, "start, through a freshly started gateway (one tenant). RSS of the gateway process: VmRSS idle\n")
	fmt.Fprintf(&b, "before the run, VmHWM during it, VmRSS after the last consumer stopped.\n\n")
	fmt.Fprintln(&b, "| consumers | idle RSS | peak RSS (VmHWM) | max_total_in_flight_bytes (tenant share · per connection) | RSS 10 s after | 30 s after | 60 s after | throughput, all consumers | gateway CPU s/GiB |")
	fmt.Fprintln(&b, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	fmt.Fprintf(&b, "| %d × %s | %s | %s | %s (%s · %s) | %s | %s | %s | %.0f MiB/s (%.0f s, slowest consumer %.0f s) | %.2f |\n",
		f.n, mibLabel(f.mib), mib(f.idleKiB), mib(f.peakKiB), bytesLabel(f.total), bytesLabel(f.tenant), bytesLabel(f.perConn),
		at(10), at(30), at(60), f.mibps, f.seconds, f.slowest, f.cpuPerGiB)
	fmt.Fprintln(&b)
	if f.clientNote != "" {
		fmt.Fprintf(&b, "- Consumers (franz-go hooks): %s; read_errors counts answers whose read failed (a read timeout among them).\n", f.clientNote)
	}
	grown := (f.peakKiB - f.idleKiB) / 1024
	if f.total > 0 {
		verdict := "within"
		if f.peakKiB*1024 > float64(f.total)+f.idleKiB*1024 {
			verdict = "above"
		}
		fmt.Fprintf(&b, "- Peak: %s above idle, %s max_total_in_flight_bytes (%s) over the idle base.\n", fmt.Sprintf("%.0f MiB", grown), verdict, bytesLabel(f.total))
	}
	last := 0
	for s := range f.after {
		last = max(last, s)
	}
	if last > 0 {
		fmt.Fprintf(&b, "- %d s after the consumers stopped: %s, %.0f MiB above idle (%.0f %% of the growth at the peak returned).\n",
			last, mib(f.after[last]), (f.after[last]-f.idleKiB)/1024, 100*(f.peakKiB-f.after[last])/max(f.peakKiB-f.idleKiB, 1))
		if f.heapIdle > 0 && f.heapAfter[last] > 0 {
			fmt.Fprintf(&b, "- Go heap in use (/metrics): %.0f MiB idle, %.0f MiB %d s after.\n", f.heapIdle/(1<<20), f.heapAfter[last]/(1<<20), last)
		}
	}
	return b.String()
}
