// The soak's report: the books against the broker (lost, duplicated,
// unread; transactions whole or absent), Redis's outages and budget
// counters (redisfault.go), the errors by kind, the faults
// and when, the gateway's gauges and the flatness rule's verdict, written
// to report.md and printed; the gauges drawn with gnuplot into soak.png.
package main

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// report writes the report and the plot and returns the exit status.
func (sk *soak) report(r onBroker) int {
	s, b := sk.s, sk.b
	b.mu.Lock()
	ev := countEvents(b.acked, r.events, b.read)
	tx := countTxns(b.txns, b.txnSize, r.ledger, b.ledger)
	sent, cuts, restarts := b.sent, b.cuts, b.restarts
	errs := maps.Clone(b.errs)
	b.mu.Unlock()

	var md strings.Builder
	pass := true
	fail := func(cond bool) string {
		if cond {
			pass = false
			return "**FAIL**"
		}
		return "pass"
	}
	fmt.Fprintf(&md, "# Soak, %v\n\n%d tenants; per tenant an idempotent producer (%d records/s of %d B), a group of %d members, "+
		"a transactional producer (%d records every %v, one transaction in %d aborted), a read_committed group of %d members; "+
		"a client connection cut every %v, a client closed and started again every %v.\n\n",
		s.duration, s.tenants, s.rate, s.size, s.members, txnRecords, s.txnEvery, abortEvery, s.rcMembers, s.cutEvery, s.restartEvery)
	fmt.Fprintf(&md, "| events (idempotent, acks=all) | |\n|---|---|\n| sent | %d |\n| acknowledged | %d |\n| on the broker | %d |\n"+
		"| read by the group | %d |\n| lost | %d %s |\n| duplicated on the broker | %d %s |\n| unread by the group | %d %s |\n"+
		"| out of order in a partition | %d %s |\n| written, never acknowledged (given up) | %d |\n\n",
		sent, ev.Acked, ev.OnBroker, ev.Read, ev.Lost, fail(ev.Lost > 0), ev.Dup, fail(ev.Dup > 0),
		ev.Unread, fail(ev.Unread > 0), r.outOfOrder, fail(r.outOfOrder > 0), ev.Extra)
	fmt.Fprintf(&md, "| transactions | |\n|---|---|\n| begun | %d |\n| committed | %d (%d records) |\n| aborted | %d |\n"+
		"| in doubt (end failed) | %d |\n| committed records lost | %d %s |\n| duplicated | %d %s |\n"+
		"| unread by the read_committed group | %d %s |\n| aborted records seen (read_committed) | %d %s |\n"+
		"| in doubt, seen in part | %d %s |\n\n",
		tx.Txns, tx.Committed, tx.Acked, tx.Aborted, tx.InDoubt, tx.Lost, fail(tx.Lost > 0), tx.Dup, fail(tx.Dup > 0),
		tx.Unread, fail(tx.Unread > 0), tx.AbortedSeen, fail(tx.AbortedSeen > 0), tx.Torn, fail(tx.Torn > 0))
	panics := sk.panics()
	fmt.Fprintf(&md, "Client connections cut: %d; clients restarted: %d; gateway log lines with \"panic\": %d %s.\n\n",
		cuts, restarts, panics, fail(panics > 0))
	sk.upgradeSection(&md, fail)
	sk.redisSection(&md, fail)
	sk.errorsTable(&md, errs)
	sk.eventsTable(&md)
	if !sk.gaugesTable(&md) {
		pass = false
	}
	if err := sk.plot(); err != nil {
		fmt.Fprintf(&md, "plot: %v\n\n", err)
	} else {
		fmt.Fprintf(&md, "Plot: %s\n\n", filepath.Join(s.out, "soak.png"))
	}
	verdict := "PASS"
	if !pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(&md, "**Soak: %s**\n", verdict)
	_ = os.WriteFile(filepath.Join(s.out, "report.md"), []byte(md.String()), 0o644)
	fmt.Println()
	fmt.Print(md.String())
	if !pass {
		return 1
	}
	return 0
}

func (sk *soak) errorsTable(md *strings.Builder, errs map[string]int) {
	md.WriteString("| errors the clients saw, by kind | count |\n|---|---|\n")
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		fmt.Fprintf(md, "| %s | %d |\n", k, errs[k])
	}
	if len(errs) == 0 {
		md.WriteString("| none | 0 |\n")
	}
	md.WriteString("\n")
}

func (sk *soak) eventsTable(md *strings.Builder) {
	md.WriteString("| # (plot) | at | what |\n|---|---|---|\n")
	for i, e := range sk.events {
		fmt.Fprintf(md, "| %d | %.0f s | %s |\n", i+1, e.At.Seconds(), e.What)
	}
	md.WriteString("\n")
}

// gaugesTable applies the flatness rule to the samples of the run (the
// drain after it left out) and reports whether every gauge is flat.
func (sk *soak) gaugesTable(md *strings.Builder) bool {
	var rss, fds, gor, cons []float64
	sk.samplesMu.Lock()
	for _, g := range sk.samples {
		if g.At < sk.s.duration {
			rss, fds, gor, cons = append(rss, g.RSSMiB), append(fds, g.FDs), append(gor, g.Goroutines), append(cons, g.Connections)
		}
	}
	sk.samplesMu.Unlock()
	fmt.Fprintf(md, "Gauges sampled every %v (%d samples in the run). Flat: the median of the last quarter of the samples at most "+
		"ratio × the median of the second quarter + slack (one-sided: growth fails).\n\n", sk.s.sampleEvery, len(rss))
	md.WriteString("| gauge | min | max | Q2 median | Q4 median | rule | verdict |\n|---|---|---|---|---|---|---|\n")
	ok := true
	row := func(name string, v []float64, r *flatRule) {
		if len(v) < 4 {
			fmt.Fprintf(md, "| %s | - | - | - | - | - | **FAIL** (%d samples: too few to judge) |\n", name, len(v))
			ok = false
			return
		}
		verdict := "-"
		if r != nil {
			q2, q4, flat := r.flatness(v)
			verdict, ok = "flat", ok && flat
			if !flat {
				verdict = "**NOT FLAT**"
			}
			fmt.Fprintf(md, "| %s | %.0f | %.0f | %.1f | %.1f | ≤ %.2f × Q2 + %.0f | %s |\n", name, slices.Min(v), slices.Max(v), q2, q4, r.Ratio, r.Slack, verdict)
			return
		}
		n := len(v)
		fmt.Fprintf(md, "| %s | %.0f | %.0f | %.1f | %.1f | - | - |\n", name, slices.Min(v), slices.Max(v), median(v[n/4:n/2]), median(v[n-n/4:]))
	}
	row("RSS, MiB", rss, &sk.s.rssRule)
	row("open fds", fds, &sk.s.fdRule)
	row("goroutines", gor, &sk.s.goRule)
	row("client connections", cons, nil)
	md.WriteString("\n")
	return ok
}

// panics counts the gateway logs' lines holding "panic".
func (sk *soak) panics() int {
	n := 0
	for _, p := range sk.s.gwLogs {
		if b, err := os.ReadFile(p); err == nil {
			n += strings.Count(string(b), "panic")
		}
	}
	return n
}

// plot draws the gauges against time, the faults marked, into soak.png.
func (sk *soak) plot() error {
	out := sk.s.out
	var dat strings.Builder
	sk.samplesMu.Lock()
	for _, g := range sk.samples {
		fmt.Fprintf(&dat, "%.1f %.2f %.0f %.0f %.0f\n", g.At.Seconds(), g.RSSMiB, g.FDs, g.Goroutines, g.Connections)
	}
	sk.samplesMu.Unlock()
	datPath := filepath.Join(out, "samples.dat")
	if err := os.WriteFile(datPath, []byte(dat.String()), 0o644); err != nil {
		return err
	}
	var marks strings.Builder
	for i, e := range sk.events {
		x := e.At.Seconds()
		fmt.Fprintf(&marks, "set arrow %d from %.1f, graph 0 to %.1f, graph 1 nohead dt 2 lc rgb \"#888888\"\n", i+1, x, x)
		fmt.Fprintf(&marks, "set label %d \"%d\" at %.1f, graph 0.96 offset 0.4,0 left font \",8\"\n", i+1, i+1, x)
	}
	gp := fmt.Sprintf(`set terminal pngcairo size 1100,900 font "DejaVu Sans,10"
set output "%s"
set multiplot layout 3,1 title "flexway soak, %v: %d tenants, faults and churn (dashed, numbered: the events of the report)"
set grid
set xlabel "s"
%sset ylabel "RSS, MiB"
plot "%s" using 1:2 with linespoints lc rgb "#d62728" pt 7 ps 0.6 title "VmRSS"
set ylabel "count"
plot "%s" using 1:3 with linespoints lc rgb "#1f77b4" pt 7 ps 0.6 title "open fds", "" using 1:5 with lines lc rgb "#2ca02c" title "client connections"
set ylabel "goroutines"
plot "%s" using 1:4 with linespoints lc rgb "#9467bd" pt 7 ps 0.6 title "goroutines"
unset multiplot
`, filepath.Join(out, "soak.png"), sk.s.duration, sk.s.tenants, marks.String(), datPath, datPath, datPath)
	gpPath := filepath.Join(out, "soak.gp")
	if err := os.WriteFile(gpPath, []byte(gp), 0o644); err != nil {
		return err
	}
	if b, err := exec.Command("gnuplot", gpPath).CombinedOutput(); err != nil {
		return fmt.Errorf("gnuplot: %v: %s", err, b)
	}
	return nil
}
