package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Where the relaying process's time and a record's wait go (issue 35.1,
// 35.2): for each run of a relaying path, the times its threads were
// scheduled in (schedstat's second count: wake-ups, summed over threads),
// with BENCH_SYSCALLS=1 the system calls it made (perf stat on
// raw_syscalls:sys_enter, attached for the run), and for the gateway the
// change of its engine's counters and histograms over the run (loop
// events and tasks, pauses, splices), written to
// metrics/<scenario>-<path>-<rep>.txt in the results.

// schedSlices is the number of times pid's threads were scheduled in,
// summed from /proc/<pid>/task/*/schedstat (its third field).
func schedSlices(pid int) float64 {
	if pid == 0 {
		return 0
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	var n float64
	for _, t := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(data)); len(f) > 2 {
			v, _ := strconv.ParseFloat(f[2], 64)
			n += v
		}
	}
	return n
}

// sysTrace counts the system calls of one process while it is attached.
type sysTrace struct {
	cmd  *exec.Cmd
	file string
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
	cmd := exec.Command("perf", "stat", "-x", ",", "-e", "raw_syscalls:sys_enter", "-p", strconv.Itoa(pid), "-o", f.Name())
	cmd.SysProcAttr = dieWith(syscall.SIGKILL)
	if err := cmd.Start(); err != nil {
		return nil
	}
	time.Sleep(100 * time.Millisecond) // attached before the run begins
	return &sysTrace{cmd: cmd, file: f.Name()}
}

// stop detaches and returns the system calls counted (NaN: unknown).
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
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ",")
		if len(f) > 2 && strings.Contains(f[2], "raw_syscalls:sys_enter") {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				return v
			}
		}
	}
	return -1
}

// engineCounters reads the gateway's flexway_engine_* series (counters and
// histogram buckets) from its /metrics; nil when it cannot.
func (h *harness) engineCounters() map[string]float64 {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + h.admin + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "flexway_engine_") && !strings.HasPrefix(line, "flexway_requests_total") {
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

// writeCounterDelta writes what changed between before and after, one
// series a line, sorted, to metrics/<scenario>-<path>-<rep>.txt.
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
	dir := filepath.Join(h.out, "metrics")
	if os.MkdirAll(dir, 0o755) != nil {
		return
	}
	slug := strings.NewReplacer(" ", "-", "/", "-", "(", "", ")", "", ",", "").Replace(scenario)
	_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%s-%d.txt", slug, path, rep)), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}
