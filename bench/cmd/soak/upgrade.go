// The soak's upgrade (issue 36.4): once, before the kill, the gateway is
// upgraded by handover (SIGUSR2: the same binary started on its listening
// sockets, the old process drains) while a dialer connects to the
// bootstrap every 10 ms. The report says whether a dial was refused, how
// long the old process took to exit (within server.shutdown_timeout), and
// the workload's books cover the upgrade as they cover the kill.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/internal/testkit"
)

const faultUpgrade = "gateway upgraded (SIGUSR2, handover)"

// handoverLine is what the new process logs once it serves.
const handoverLine = "flexway handover: this process serves the old one's sockets"

// upgradeResult is what the report says of the upgrade.
type upgradeResult struct {
	done           bool
	at             time.Duration
	oldPid, newPid int
	exitedAfter    time.Duration // the old process's exit, after the new one served
	dials          int
	refused        []string
	err            error
}

// withUpgrade adds the upgrade to a schedule: at d/16 (10 s at least),
// before the kill at d/8.
func withUpgrade(plan []plannedFault, d time.Duration) []plannedFault {
	return append([]plannedFault{{At: max(10*time.Second, d/16), Kind: faultUpgrade}}, plan...)
}

// upgrade hands the gateway over to a new process; a failure is booked in
// the report, and the soak goes on with whichever process serves.
func (sk *soak) upgrade() {
	old := sk.gateway()
	r := &sk.upgraded
	r.done, r.at, r.oldPid = true, time.Since(sk.s.start), old.pid
	sk.mark(faultUpgrade)
	d := testkit.DialEvery(10*time.Millisecond, old.bootstrap())
	defer func() { r.dials, r.refused = d.Stop() }()
	log := sk.s.gwLogs[len(sk.s.gwLogs)-1] // the new process inherits the old one's log
	before := strings.Count(readText(log), handoverLine)
	if err := syscall.Kill(old.pid, syscall.SIGUSR2); err != nil {
		r.err = err
		return
	}
	var served time.Time
	for deadline := time.Now().Add(60 * time.Second); r.newPid == 0; time.Sleep(20 * time.Millisecond) {
		if r.newPid = newPid(readText(log), before); r.newPid != 0 {
			served = time.Now()
		} else if time.Now().After(deadline) {
			r.err = fmt.Errorf("no new process served within 60 s (log: %s)", log)
			return
		}
	}
	for old.alive() {
		if time.Since(served) > configs.DefaultShutdownTimeout+5*time.Second {
			r.err = fmt.Errorf("the old process %d still runs %v after its successor served", old.pid, time.Since(served))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.exitedAfter = time.Since(served)
	gw := &gateway{pid: r.newPid, base: old.base, gen: old.gen + 1, done: make(chan struct{})}
	go func() {
		for gw.alive() {
			time.Sleep(100 * time.Millisecond)
		}
		close(gw.done)
	}()
	sk.gwMu.Lock()
	sk.gw = gw
	sk.gwMu.Unlock()
	sk.mark(fmt.Sprintf("gateway upgraded: pid %d serves, pid %d exited %v after", r.newPid, r.oldPid, r.exitedAfter.Round(time.Millisecond)))
}

// newPid is the pid in the handover line after the first before ones.
func newPid(log string, before int) int {
	lines := strings.Split(log, "\n")
	n := 0
	for _, l := range lines {
		if !strings.Contains(l, handoverLine) {
			continue
		}
		if n++; n <= before {
			continue
		}
		var v struct{ Pid int }
		if json.Unmarshal([]byte(l), &v) == nil {
			return v.Pid
		}
	}
	return 0
}

func readText(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// alive reports whether the gateway's process runs (a zombie does not: an
// upgraded process's parent is gone).
func (gw *gateway) alive() bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", gw.pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// upgradeSection writes the report's line on the upgrade.
func (sk *soak) upgradeSection(md *strings.Builder, fail func(bool) string) {
	r := sk.upgraded
	if !r.done {
		return
	}
	if r.err != nil {
		fmt.Fprintf(md, "Gateway upgraded by handover (SIGUSR2) at %.0fs: %v %s; %d dials every 10 ms to the bootstrap, %d refused.\n\n",
			r.at.Seconds(), r.err, fail(true), r.dials, len(r.refused))
		return
	}
	first := ""
	if len(r.refused) > 0 {
		first = " (first: " + r.refused[0] + ")"
	}
	fmt.Fprintf(md, "Gateway upgraded by handover (SIGUSR2) at %.0fs: pid %d → %d; the old one exited %v after the new one served "+
		"(server.shutdown_timeout %v) %s; %d dials every 10 ms to the bootstrap meanwhile, %d refused%s %s.\n\n",
		r.at.Seconds(), r.oldPid, r.newPid, r.exitedAfter.Round(time.Millisecond), configs.DefaultShutdownTimeout,
		fail(r.exitedAfter > configs.DefaultShutdownTimeout), r.dials, len(r.refused), first, fail(len(r.refused) > 0))
}
