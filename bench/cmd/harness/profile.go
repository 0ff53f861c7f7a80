package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
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
		rec.SysProcAttr = dieWith(syscall.SIGKILL)
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
		fmt.Fprintf(&report, "%.0f records/s, %.1f MiB/s; gateway %.2f CPU s for %.2f GiB = %.2f CPU s/GiB. %s samples (perf record -e cpu-clock -F 999 -g).\n\n",
			r.recs, r.mibps, g1-g0, r.bytes/(1<<30), (g1-g0)/(r.bytes/(1<<30)), sampleCount(string(flat)))
		sw := 0.0
		for _, f := range frames {
			if strings.HasPrefix(f.sym, "finish_task_switch") {
				sw += f.pct
			}
		}
		fmt.Fprintf(&report, "%.1f %% of the samples land in the kernel's finish_task_switch, where a thread resumes after a switch: "+
			"in this VM (no PMU) the cpu-clock sample of a thread that runs in short bursts (the event loops between two epoll_wait, "+
			"Go's sysmon between two nanosleep) falls due while it is switched out and is charged at its next switch in, with the "+
			"call chain of the sleep it wakes from. They are CPU time of the gateway, but not attributable to a frame: "+
			"the shares below leave them out (the Go profile after this one has no such bias).\n\n", sw)
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
		fmt.Fprintln(&report, "Gateway frames, cumulative (self + callees, % of all samples), ≥ 3 %:")
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
		fmt.Fprintln(&report, "System calls, cumulative (the kernel's work under each, % of all samples: finish_task_switch included), ≥ 1 %:")
		fmt.Fprintln(&report)
		fmt.Fprintln(&report, "| total | system call |")
		fmt.Fprintln(&report, "|--:|---|")
		for _, f := range children {
			if name, ok := syscallFrames[f.sym]; ok {
				fmt.Fprintf(&report, "| %.1f %% | %s (`%s`) |\n", f.pct, name, f.sym)
			}
		}
		fmt.Fprintln(&report)
	}
	_ = os.WriteFile(filepath.Join(h.out, "profile-perf.md"), []byte(report.String()), 0o644)
	fmt.Println(report.String())
}

// goProfile restarts the gateway as gwprof (the same engine, with a CPU
// profile endpoint) and takes a Go CPU profile under the same two loads.
// Go's profiler samples each thread's own CPU clock: no switch bias, and
// time in system calls is charged to the Go frame that made the call.
func (h *harness) goProfile() {
	prof := envStr("BENCH_PROF_ADDR", "127.0.0.1:29465")
	h.startGatewayWith("gwprof", "http://"+prof+"/healthz", "-prof", prof, "-hz", envStr("BENCH_PROF_HZ", "1000"))
	defer h.stopGateway()
	post := func(u string) error {
		resp, err := http.Post(u, "text/plain", nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			return fmt.Errorf("%s: %s %s", u, resp.Status, b)
		}
		return nil
	}
	var report strings.Builder
	for _, w := range []struct {
		name string
		run  func() (result, error)
	}{
		{"producer", func() (result, error) { return h.perfProducer(gateway, "1", 1024, 2*h.records, -1) }},
		{"consumer", func() (result, error) { return h.perfConsumer(gateway, 2*h.records) }},
	} {
		file := filepath.Join(h.out, "gateway-"+w.name+".pprof")
		if err := post("http://" + prof + "/start?file=" + url.QueryEscape(file)); err != nil {
			h.say("go profile: %v", err)
			return
		}
		g0 := cpuSeconds(h.gwPID())
		r, err := w.run()
		g1 := cpuSeconds(h.gwPID())
		if err2 := post("http://" + prof + "/stop"); err2 != nil {
			h.say("go profile: %v", err2)
			return
		}
		if err != nil {
			h.say("profiled %s run failed: %v", w.name, err)
			continue
		}
		bin := filepath.Join(h.bin, "gwprof")
		top, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=200", bin, file).Output()
		if err != nil {
			h.say("go tool pprof: %v", err)
			continue
		}
		cum, _ := exec.Command("go", "tool", "pprof", "-top", "-cum", "-nodecount=60", bin, file).Output()
		_ = os.WriteFile(filepath.Join(h.out, "pprof-"+w.name+"-top.txt"), top, 0o644)
		_ = os.WriteFile(filepath.Join(h.out, "pprof-"+w.name+"-cum.txt"), cum, 0o644)
		flat := parsePprof(string(top))
		fmt.Fprintf(&report, "### Go profile of the gateway under the %s perf test (1 KiB, unlimited)\n\n", w.name)
		fmt.Fprintf(&report, "%.0f records/s, %.1f MiB/s; gateway %.2f CPU s for %.2f GiB = %.2f CPU s/GiB (this run). pprof: %s "+
			"(Go's profiler, at %s Hz, catches only part of the CPU time here: threads that run in bursts shorter than the kernel's tick; the shares are of what it caught).\n\n",
			r.recs, r.mibps, g1-g0, r.bytes/(1<<30), (g1-g0)/(r.bytes/(1<<30)), pprofHeader(string(top)), envStr("BENCH_PROF_HZ", "1000"))
		fmt.Fprintln(&report, "Self time by component (a system call's kernel time is charged to the syscall frame):")
		fmt.Fprintln(&report)
		fmt.Fprintln(&report, "| component | share |")
		fmt.Fprintln(&report, "|---|--:|")
		for _, c := range byComponent(flat) {
			fmt.Fprintf(&report, "| %s | %.1f %% |\n", c.name, c.pct)
		}
		fmt.Fprintln(&report)
		fmt.Fprintln(&report, "Top frames (self):")
		fmt.Fprintln(&report)
		fmt.Fprintln(&report, "| self | frame |")
		fmt.Fprintln(&report, "|--:|---|")
		for i, f := range flat {
			if i == 20 {
				break
			}
			fmt.Fprintf(&report, "| %.1f %% | `%s` |\n", f.pct, f.sym)
		}
		fmt.Fprintln(&report)
		fmt.Fprintln(&report, "The gateway's frames, gnet's and the system call wrappers, cumulative (≥ 2 %):")
		fmt.Fprintln(&report)
		fmt.Fprintln(&report, "| cum | frame |")
		fmt.Fprintln(&report, "|--:|---|")
		for _, f := range parsePprofCum(string(cum)) {
			if f.pct >= 2 && (strings.Contains(f.sym, "flexway/flexway/") || strings.Contains(f.sym, "gnet") ||
				strings.HasPrefix(f.sym, "golang.org/x/sys/unix.")) {
				fmt.Fprintf(&report, "| %.1f %% | `%s` |\n", f.pct, f.sym)
			}
		}
		fmt.Fprintln(&report)
	}
	_ = os.WriteFile(filepath.Join(h.out, "profile-go.md"), []byte(report.String()), 0o644)
	fmt.Println(report.String())
}

var durationLine = regexp.MustCompile(`Duration: .*`)

func pprofHeader(s string) string { return strings.TrimSpace(durationLine.FindString(s)) }

// pprof -top rows: "     flat  flat%   sum%        cum   cum%  name"
var pprofRow = regexp.MustCompile(`^\s*([\d.]+\w*)\s+([\d.]+)%\s+([\d.]+)%\s+([\d.]+\w*)\s+([\d.]+)%\s+(.+?)\s*$`)

func parsePprof(s string) []frame {
	var fs []frame
	for _, l := range strings.Split(s, "\n") {
		if m := pprofRow.FindStringSubmatch(l); m != nil {
			p, _ := strconv.ParseFloat(m[2], 64)
			fs = append(fs, frame{pct: p, sym: m[6]})
		}
	}
	return fs
}

func parsePprofCum(s string) []frame {
	var fs []frame
	for _, l := range strings.Split(s, "\n") {
		if m := pprofRow.FindStringSubmatch(l); m != nil {
			p, _ := strconv.ParseFloat(m[5], 64)
			fs = append(fs, frame{pct: p, sym: m[6]})
		}
	}
	return fs
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

var samplesLine = regexp.MustCompile(`# Samples: (\S+)`)

// sampleCount is perf's own count ("1K"): the report rounds it.
func sampleCount(s string) string {
	if m := samplesLine.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return "?"
}

// syscallFrames are the kernel frames that stand for one system call
// (recent kernels dispatch through x64_sys_call, where __x64_sys_read and
// __x64_sys_writev are inlined away).
var syscallFrames = map[string]string{
	"ksys_read":             "read",
	"ksys_write":            "write",
	"do_writev":             "writev",
	"do_readv":              "readv",
	"__x64_sys_epoll_pwait": "epoll_pwait",
	"__x64_sys_epoll_wait":  "epoll_wait",
	"__x64_sys_nanosleep":   "nanosleep (Go's sysmon, spinning Ms)",
	"__x64_sys_futex":       "futex (goroutine wake-ups)",
	"__sys_accept4":         "accept4",
	"__sys_connect":         "connect",
	"__x64_sys_sendmsg":     "sendmsg",
	"__x64_sys_recvfrom":    "recvfrom",
	"__x64_sys_sendto":      "sendto",
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
		return "system calls (Go: kernel time included; perf: the wrappers)"
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
