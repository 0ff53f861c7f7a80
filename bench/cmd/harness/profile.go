package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuProfile samples the gateway with Linux perf (cpu-clock, call graphs by
// frame pointers, which Go keeps) while kafka-producer-perf-test produces
// through it at an unlimited rate (acks=1, 1 KiB), then while the consumer
// perf test reads through it, and writes the top frames and the CPU share of
// each component (kernel, runtime, gnet, engine, codec, decide, relay, ...).
func (h *harness) cpuProfile() {
	if _, err := exec.LookPath("perf"); err != nil {
		h.say("no perf on this machine: CPU profile skipped (apt-get install linux-perf)")
		return
	}
	var report strings.Builder
	for _, w := range []struct {
		name string
		run  func() (result, error)
	}{
		{"producer", func() (result, error) { return h.perfProducer(gateway, "1", 1024, 2*h.records, -1) }},
		{"consumer", func() (result, error) { return h.perfConsumer(gateway, 2*h.records) }},
	} {
		data := filepath.Join(h.out, "perf-"+w.name+".data")
		rec := exec.Command("perf", "record", "-e", "cpu-clock", "-F", "999", "-g", "-p", strconv.Itoa(h.gwPID()), "-o", data)
		recLog, _ := os.Create(filepath.Join(h.out, "logs", "perf-record-"+w.name+".log"))
		rec.Stdout, rec.Stderr = recLog, recLog
		rec.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := rec.Start(); err != nil {
			h.say("perf record: %v: profile skipped", err)
			return
		}
		time.Sleep(500 * time.Millisecond)
		g0 := cpuSeconds(h.gwPID())
		r, err := w.run()
		g1 := cpuSeconds(h.gwPID())
		_ = rec.Process.Signal(syscall.SIGINT)
		_ = rec.Wait()
		recLog.Close()
		if err != nil {
			h.say("profiled %s run failed: %v", w.name, err)
			continue
		}
		flat, err := exec.Command("perf", "report", "-i", data, "--stdio", "--no-children", "-F", "overhead,sym",
			"-g", "none", "--percent-limit", "0").Output()
		if err != nil {
			h.say("perf report: %v", err)
			continue
		}
		cum, _ := exec.Command("perf", "report", "-i", data, "--stdio", "--children", "-F", "overhead_children,overhead,sym",
			"-g", "none", "--percent-limit", "1").Output()
		_ = os.WriteFile(filepath.Join(h.out, "perf-"+w.name+"-flat.txt"), flat, 0o644)
		_ = os.WriteFile(filepath.Join(h.out, "perf-"+w.name+"-children.txt"), cum, 0o644)
		frames := parsePerf(string(flat))
		fmt.Fprintf(&report, "### gateway under the %s perf test (1 KiB, unlimited, through the gateway)\n\n", w.name)
		fmt.Fprintf(&report, "%.0f records/s, %.1f MiB/s; gateway %.2f CPU s for %.2f GiB = %.2f CPU s/GiB. %d samples (cpu-clock, 999 Hz).\n\n",
			r.recs, r.mibps, g1-g0, r.bytes/(1<<30), (g1-g0)/(r.bytes/(1<<30)), sampleCount(string(flat)))
		sw := 0.0
		for _, f := range frames {
			if strings.HasPrefix(f.sym, "finish_task_switch") {
				sw += f.pct
			}
		}
		fmt.Fprintf(&report, "%.1f %% of the samples land in the kernel's finish_task_switch, where a thread resumes after a switch "+
			"(in this VM, without a PMU, cpu-clock samples taken while a switch held interrupts off are charged there: "+
			"they measure sleeping and waking — sysmon's nanosleep, epoll_wait, futex — not work). "+
			"The shares below leave them out.\n\n", sw)
		fmt.Fprintln(&report, "CPU share by component (self time, finish_task_switch left out):")
		fmt.Fprintln(&report)
		fmt.Fprintln(&report, "| component | share |")
		fmt.Fprintln(&report, "|---|--:|")
		for _, c := range byComponent(frames) {
			fmt.Fprintf(&report, "| %s | %.1f %% |\n", c.name, c.pct)
		}
		fmt.Fprintln(&report)
		fmt.Fprintln(&report, "Top frames (self time, % of the samples without finish_task_switch):")
		fmt.Fprintln(&report)
		fmt.Fprintln(&report, "| self | frame |")
		fmt.Fprintln(&report, "|--:|---|")
		shown := 0
		for _, f := range frames {
			if shown == 25 {
				break
			}
			if strings.HasPrefix(f.sym, "finish_task_switch") {
				continue
			}
			fmt.Fprintf(&report, "| %.1f %% | `%s` |\n", f.pct*100/(100-sw), f.sym)
			shown++
		}
		fmt.Fprintln(&report)
		// The gateway's own packages, cumulative (children included).
		fmt.Fprintln(&report, "Gateway frames, cumulative (self + callees), ≥ 3 %:")
		fmt.Fprintln(&report)
		fmt.Fprintln(&report, "| total | frame |")
		fmt.Fprintln(&report, "|--:|---|")
		children := parsePerfChildren(string(cum))
		for _, f := range children {
			if f.pct >= 3 && (strings.Contains(f.sym, "flexway/") || strings.Contains(f.sym, "gnet")) {
				fmt.Fprintf(&report, "| %.1f %% | `%s` |\n", f.pct, f.sym)
			}
		}
		fmt.Fprintln(&report)
		fmt.Fprintln(&report, "System calls, cumulative (the kernel's work under each), ≥ 1 %:")
		fmt.Fprintln(&report)
		fmt.Fprintln(&report, "| total | system call |")
		fmt.Fprintln(&report, "|--:|---|")
		for _, f := range children {
			if strings.HasPrefix(f.sym, "__x64_sys_") {
				fmt.Fprintf(&report, "| %.1f %% | `%s` |\n", f.pct, strings.TrimPrefix(f.sym, "__x64_sys_"))
			}
		}
		fmt.Fprintln(&report)
	}
	_ = os.WriteFile(filepath.Join(h.out, "profile.md"), []byte(report.String()), 0o644)
	fmt.Println(report.String())
}

type frame struct {
	pct float64
	sym string
	k   bool // kernel
}

// "    12.34%  [k] do_syscall_64" or "     1.20%  [.] runtime.memmove"
var perfRow = regexp.MustCompile(`^\s+([\d.]+)%\s+\[([k.])\]\s+(.+?)\s*$`)

// children rows: "    45.00%     1.00%  [.] github.com/..."
var perfChildRow = regexp.MustCompile(`^\s+([\d.]+)%\s+([\d.]+)%\s+\[([k.])\]\s+(.+?)\s*$`)

func parsePerf(s string) []frame {
	var fs []frame
	for _, l := range strings.Split(s, "\n") {
		if m := perfRow.FindStringSubmatch(l); m != nil {
			p, _ := strconv.ParseFloat(m[1], 64)
			fs = append(fs, frame{pct: p, sym: m[3], k: m[2] == "k"})
		}
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].pct > fs[j].pct })
	return fs
}

func parsePerfChildren(s string) []frame {
	var fs []frame
	for _, l := range strings.Split(s, "\n") {
		if m := perfChildRow.FindStringSubmatch(l); m != nil {
			p, _ := strconv.ParseFloat(m[1], 64)
			fs = append(fs, frame{pct: p, sym: m[4], k: m[3] == "k"})
		}
	}
	return fs
}

var samplesLine = regexp.MustCompile(`# Samples: (\d+)`)

func sampleCount(s string) int {
	if m := samplesLine.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

type component struct {
	name string
	pct  float64
}

func componentOf(f frame) string {
	s := f.sym
	switch {
	case f.k:
		return "kernel (syscalls, TCP, copies)"
	case strings.Contains(s, "flexway/flexway/engine"):
		return "flexway engine"
	case strings.Contains(s, "flexway/flexway/codec"):
		return "flexway codec"
	case strings.Contains(s, "flexway/flexway/decide"):
		return "flexway decide"
	case strings.Contains(s, "flexway/flexway/relay"):
		return "flexway relay"
	case strings.Contains(s, "flexway/flexway/"):
		return "flexway (other)"
	case strings.Contains(s, "panjf2000/gnet"):
		return "gnet"
	case strings.Contains(s, "twmb/franz-go"):
		return "kmsg / kbin"
	case strings.Contains(s, "VictoriaMetrics"):
		return "metrics"
	case strings.HasPrefix(s, "runtime.") && (strings.Contains(s, "gc") || strings.Contains(s, "mark") || strings.Contains(s, "scan") || strings.Contains(s, "sweep")):
		return "Go runtime: GC"
	case strings.HasPrefix(s, "runtime.memmove") || strings.HasPrefix(s, "runtime.memclr"):
		return "Go runtime: memmove/memclr"
	case strings.HasPrefix(s, "runtime."):
		return "Go runtime: other (scheduler, malloc, ...)"
	case strings.HasPrefix(s, "syscall.") || strings.HasPrefix(s, "internal/runtime/syscall") || strings.HasPrefix(s, "golang.org/x/sys"):
		return "syscall wrappers"
	default:
		return "other"
	}
}

func byComponent(fs []frame) []component {
	m := map[string]float64{}
	total := 0.0
	for _, f := range fs {
		if strings.HasPrefix(f.sym, "finish_task_switch") {
			continue
		}
		m[componentOf(f)] += f.pct
		total += f.pct
	}
	for k := range m {
		m[k] = m[k] * 100 / total
	}
	var cs []component
	for k, v := range m {
		cs = append(cs, component{k, v})
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].pct > cs[j].pct })
	return cs
}
