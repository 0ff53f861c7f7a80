package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flexway/flexway/bench/procstat"
)

// Where the relaying process's time and a record's wait go (issue 35.1,
// 35.2): for each run of a relaying path, the times its threads were
// scheduled in (schedstat's third field: wake-ups, summed over threads),
// with BENCH_SYSCALLS=1 the system calls it made (perf stat, attached for
// the run: all, and some one by one, <run>-syscalls.txt), with
// BENCH_RUN_PROFILE=1 a perf record of the run (<run>.perf.data and its
// flat profile, .txt), and for the gateway the change of its engine's
// counters and histograms over the run (loop events and tasks, pauses,
// splices, <run>.txt); <run> is metrics/<scenario>-<path>-<rep> in the
// results.

// schedSlices is the number of times pid's threads were scheduled in.
func schedSlices(pid int) float64 { return procstat.Sched(pid, 2) }

// runFile is the path of a run's file metrics/<scenario>-<path>-<rep><suffix>
// in the results, its folder made; "" when it cannot be.
func (h *harness) runFile(scenario, path string, rep int, suffix string) string {
	dir := filepath.Join(h.out, "metrics")
	if os.MkdirAll(dir, 0o755) != nil {
		return ""
	}
	slug := strings.NewReplacer(" ", "-", "/", "-", "(", "", ")", "", ",", "").Replace(scenario)
	return filepath.Join(dir, fmt.Sprintf("%s-%s-%d%s", slug, path, rep, suffix))
}

// sysTrace counts the system calls of one process while it is attached:
// all of them, and those of sysBreakdown one by one.
type sysTrace struct {
	cmd  *exec.Cmd
	file string
	by   map[string]float64 // the calls of sysBreakdown, by name, once stopped
}

// sysBreakdown are the system calls counted one by one: the relays' moves,
// the pollers', the scheduler's, and a socket's enrolment.
var sysBreakdown = []string{
	"read", "readv", "write", "writev", "splice", "epoll_pwait", "epoll_wait", "epoll_ctl",
	"poll", "ppoll", "futex", "nanosleep", "ioctl", "dup", "fcntl", "getsockname", "getpeername",
	"getsockopt", "setsockopt", "close", "sched_yield", "tgkill", "madvise", "pipe2",
}

// startSysTrace attaches perf stat to pid; nil when BENCH_SYSCALLS is not
// 1, or perf cannot be started.
func (h *harness) startSysTrace(pid int) *sysTrace {
	if !h.syscalls || pid == 0 {
		return nil
	}
	f, err := os.CreateTemp(h.work, "perfstat-*.csv")
	if err != nil {
		return nil
	}
	f.Close()
	events := "raw_syscalls:sys_enter"
	for _, name := range sysBreakdown {
		events += ",syscalls:sys_enter_" + name
	}
	cmd := exec.Command("perf", "stat", "-x", ",", "-e", events, "-p", strconv.Itoa(pid), "-o", f.Name())
	cmd.SysProcAttr = dieWith(syscall.SIGKILL)
	if err := cmd.Start(); err != nil {
		return nil
	}
	time.Sleep(100 * time.Millisecond) // attached before the run begins
	return &sysTrace{cmd: cmd, file: f.Name()}
}

// stop detaches and returns the system calls counted (-1: unknown).
func (t *sysTrace) stop() float64 {
	if t == nil {
		return -1
	}
	_ = t.cmd.Process.Signal(syscall.SIGINT)
	_ = t.cmd.Wait()
	data, err := os.ReadFile(t.file)
	os.Remove(t.file)
	if err != nil {
		return -1
	}
	all := -1.0
	t.by = map[string]float64{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ",")
		if len(f) < 3 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		switch name := f[2]; {
		case name == "raw_syscalls:sys_enter":
			all = v
		case strings.HasPrefix(name, "syscalls:sys_enter_"):
			if v > 0 {
				t.by[strings.TrimPrefix(name, "syscalls:sys_enter_")] = v
			}
		}
	}
	return all
}

// breakdown is the calls counted one by one, per GiB of payload, most
// first, a `syscalls_per_gib{call="name"} N` line each.
func (t *sysTrace) breakdown(bytes float64) string {
	if t == nil || len(t.by) == 0 || bytes <= 0 {
		return ""
	}
	names := make([]string, 0, len(t.by))
	for n := range t.by {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return t.by[names[i]] > t.by[names[j]] })
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "syscalls_per_gib{call=%q} %.0f\n", n, t.by[n]/(bytes/(1<<30)))
	}
	return b.String()
}

// runSeries are the prefixes of the gateway's series kept per run: the
// engine's counters and histograms, the requests judged and the bytes
// relayed (what part of them was spliced: flexway_engine_spliced_bytes_total
// over flexway_kafka_bytes_total).
var runSeries = []string{"flexway_engine_", "flexway_kafka_requests_total", "flexway_kafka_bytes_total"}

// engineCounters reads the gateway's runSeries (counters and histogram
// buckets) from its /metrics; nil when it cannot.
func (h *harness) engineCounters() map[string]float64 {
	body, err := exposition(h.admin)
	if err != nil {
		return nil
	}
	m := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if !slices.ContainsFunc(runSeries, func(p string) bool { return strings.HasPrefix(line, p) }) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m
}

// writeSyscalls writes a run's system calls one by one, per GiB, to
// <run>-syscalls.txt.
func (h *harness) writeSyscalls(scenario, path string, rep int, t *sysTrace, bytes float64) {
	if text := t.breakdown(bytes); text != "" {
		if f := h.runFile(scenario, path, rep, "-syscalls.txt"); f != "" {
			_ = os.WriteFile(f, []byte(text), 0o644)
		}
	}
}

// writeCounterDelta writes what changed between before and after, one
// series a line, sorted, to <run>.txt.
func (h *harness) writeCounterDelta(scenario, path string, rep int, before, after map[string]float64) {
	if before == nil || after == nil {
		return
	}
	var lines []string
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			lines = append(lines, fmt.Sprintf("%s %g", k, d))
		}
	}
	sort.Strings(lines)
	if f := h.runFile(scenario, path, rep, ".txt"); f != "" {
		_ = os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	}
}

// runProfile samples one relaying process's CPU while it is attached
// (BENCH_RUN_PROFILE=1): perf record, call graphs by frame pointers.
type runProfile struct {
	cmd  *exec.Cmd
	data string
}

// startRunProfile attaches perf record to pid; nil when BENCH_RUN_PROFILE
// is not 1, or perf cannot be started.
func (h *harness) startRunProfile(pid int, scenario, path string, rep int) *runProfile {
	if !h.runProfiles || pid == 0 {
		return nil
	}
	data := h.runFile(scenario, path, rep, ".perf.data")
	if data == "" {
		return nil
	}
	cmd := exec.Command("perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-g", "-p", strconv.Itoa(pid), "-o", data)
	cmd.SysProcAttr = dieWith(syscall.SIGKILL)
	if err := cmd.Start(); err != nil {
		return nil
	}
	time.Sleep(200 * time.Millisecond)
	return &runProfile{cmd: cmd, data: data}
}

// stop detaches and writes the flat profile by symbol (its shared object
// named) beside the data, as <data>.txt.
func (p *runProfile) stop() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	_ = p.cmd.Wait()
	out, err := exec.Command("perf", "report", "-i", p.data, "--stdio", "--no-children", "-g", "none",
		"--sort", "dso,sym", "--percent-limit", "0.5").Output()
	if err == nil {
		_ = os.WriteFile(p.data+".txt", out, 0o644)
	}
}
