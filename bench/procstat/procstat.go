// Package procstat reads what a process's threads used from Linux's
// /proc, for the bench tools that measure the gateway from outside it.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Sched sums field i of /proc/<pid>/task/*/schedstat over pid's threads
// (0: time run, ns, utime+stime at ns precision where stat counts 10 ms
// ticks; 2: times scheduled in, a context switch each). A thread that
// exits takes its share with it (the Go runtime keeps its threads); 0
// when it cannot read.
func Sched(pid, i int) float64 {
	if pid == 0 {
		return 0
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	var sum float64
	for _, t := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(data)); len(f) > i {
			v, _ := strconv.ParseFloat(f[i], 64)
			sum += v
		}
	}
	return sum
}
