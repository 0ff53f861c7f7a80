package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Issue 36.2 (P1): the unit lets an upgrade's new process become the main
// one (NotifyAccess=all: its MAINPID= and READY=1 are heard), keeps
// systemctl reload as SIGHUP, names SIGUSR2 for the upgrade, and
// systemd-analyze verify accepts it, as the package's test does.
func TestUnitFollowsTheHandover(t *testing.T) {
	unit, err := os.ReadFile("../../configs/systemd/flexway.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nType=notify\n", "\nNotifyAccess=all\n", "\nExecReload=/bin/kill -HUP $MAINPID\n",
		"systemctl kill -s USR2 --kill-who=main flexway"} {
		if !bytes.Contains(unit, []byte(want)) {
			t.Errorf("the unit lacks %q", strings.TrimSpace(want))
		}
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze not installed")
	}
	bin := buildFlexway(t)
	u := filepath.Join(t.TempDir(), "flexway.service")
	writeTestFile(t, u, bytes.ReplaceAll(unit, []byte("/usr/local/bin/flexway"), []byte(bin)))
	out, err := exec.Command("systemd-analyze", "verify", "--man=no", u).CombinedOutput()
	if bytes.Contains(out, []byte("sysinit.target not found")) {
		t.Skipf("systemd-analyze verify: this machine has no systemd units: %s", out)
	}
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// fakeSystemd plays systemctl for packaging/flexway-handover: the unit's
// main pid and status text follow what the gateway tells the notify
// socket (MAINPID=, STATUS=), as systemd's do; kill sends the signal to
// the main pid; every call is kept.
type fakeSystemd struct {
	dir, path string
}

const fakeSystemctl = `#!/bin/sh
d=$FAKE_SYSTEMD
echo "$*" >> "$d/calls"
case "$1" in
is-active) exit 0 ;;
show) cat "$d/$3" ;;
kill) kill -s "$3" "$(cat "$d/MainPID")" ;;
try-restart) exit 0 ;;
esac
`

func newFakeSystemd(t *testing.T, u *upgraded) *fakeSystemd {
	t.Helper()
	f := &fakeSystemd{dir: t.TempDir()}
	writeTestFile(t, filepath.Join(f.dir, "systemctl"), []byte(fakeSystemctl))
	os.Chmod(filepath.Join(f.dir, "systemctl"), 0o755)
	f.path = f.dir + string(os.PathListSeparator) + os.Getenv("PATH")
	write := func(name, v string) { _ = os.WriteFile(filepath.Join(f.dir, name), []byte(v+"\n"), 0o644) }
	write("MainPID", strconv.Itoa(u.main()))
	write("StatusText", "")
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		seen := 0
		for {
			st := u.ns.states()
			for ; seen < len(st); seen++ {
				for _, l := range strings.Split(st[seen], "\n") {
					if v, ok := strings.CutPrefix(l, "MAINPID="); ok {
						write("MainPID", v)
					} else if v, ok := strings.CutPrefix(l, "STATUS="); ok {
						write("StatusText", v)
					}
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return f
}

// run runs the package's flexway-handover, waiting wait seconds at most.
func (f *fakeSystemd) run(t *testing.T, wait int) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command("../../packaging/flexway-handover", "flexway")
	cmd.Env = append(os.Environ(), "PATH="+f.path, "FAKE_SYSTEMD="+f.dir, fmt.Sprintf("FLEXWAY_HANDOVER_WAIT=%d", wait))
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("flexway-handover: %v\n%s%s", err, o.String(), e.String())
	}
	return o.String(), e.String()
}

func (f *fakeSystemd) calls() string {
	b, _ := os.ReadFile(filepath.Join(f.dir, "calls"))
	return string(b)
}

// Issue 36.2: the package's upgrade path (postinst runs
// packaging/flexway-handover) on the built binary under a systemd the test
// plays: it sends SIGUSR2 to the main process (systemctl kill -s USR2
// --kill-who=main), the main pid becomes the new process's, the old one
// exits; a new binary that cannot serve leaves the old process the main
// one, and the script says so and exits 0; a gateway whose status does
// not say it upgrades by handover (an older flexway) is restarted.
func TestPackageUpgradeHandsOver(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildFlexway(t)
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "acme.orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	dir, _, _ := quickstartOn(t, k, "  shutdown_timeout: 5s\n")
	u := startUpgradable(t, bin, dir, newNotifySocket(t))
	f := newFakeSystemd(t, u)
	first := u.main()
	u.waitState(0, "SIGUSR2 upgrades by handover", time.Second)

	out, _ := f.run(t, 40)
	if !strings.Contains(f.calls(), "kill -s USR2 --kill-who=main flexway") || strings.Contains(f.calls(), "try-restart") {
		t.Fatalf("flexway-handover called systemctl %q", f.calls())
	}
	msg, _ := u.waitState(1, "MAINPID=", time.Second)
	pid, _ := strconv.Atoi(strings.TrimPrefix(strings.Split(msg, "\n")[0], "MAINPID="))
	u.mu.Lock()
	u.pids = append(u.pids, pid)
	u.mu.Unlock()
	if !strings.Contains(out, fmt.Sprintf("pid %d serves, pid %d drains", pid, first)) {
		t.Fatalf("flexway-handover said %q; the new main pid is %d", out, pid)
	}
	deadline := time.Now().Add(5 * time.Second) // shutdown_timeout
	for alive(first) {
		if time.Now().After(deadline) {
			t.Fatalf("the old process %d still runs", first)
		}
		time.Sleep(20 * time.Millisecond)
	}

	cfg := filepath.Join(dir, "flexway.yaml")
	good, _ := os.ReadFile(cfg)
	writeTestFile(t, cfg, append(append([]byte(nil), good...), "no_such_key: 1\n"...))
	_, errOut := f.run(t, 5)
	if !strings.Contains(errOut, fmt.Sprintf("was not handed over within 5s: pid %d goes on serving", pid)) || !alive(pid) {
		t.Fatalf("a failed handover: flexway-handover said %q, pid %d alive: %v", errOut, pid, alive(pid))
	}
	u.waitLog("flexway upgrade failed: this process goes on serving", 1, 10*time.Second)
	writeTestFile(t, cfg, good)

	writeTestFile(t, filepath.Join(f.dir, "StatusText"), []byte("\n")) // an older flexway
	calls := strings.Count(f.calls(), "kill -s USR2")
	f.run(t, 5)
	if !strings.Contains(f.calls(), "try-restart flexway") || strings.Count(f.calls(), "kill -s USR2") != calls {
		t.Fatalf("an older gateway: flexway-handover called systemctl %q", f.calls())
	}
	u.sigterm()
}

// Issue 36.2 with WatchdogSec (P1): systemd gives WATCHDOG_PID, the pid
// it started, and an upgrade's new process is another; it feeds the
// watchdog still (WATCHDOG=1 once a second for WatchdogSec=2s) once the
// old process has exited, or systemd would kill the service.
func TestHandoverKeepsFeedingTheWatchdog(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildFlexway(t)
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "acme.orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	dir, _, _ := quickstartOn(t, k, "  shutdown_timeout: 5s\n")
	u := startUpgradable(t, bin, dir, newNotifySocket(t), "WATCHDOG_USEC=2000000")
	u.waitState(0, "WATCHDOG=1", 5*time.Second)
	u.upgrade(bin, 5*time.Second) // returns once the old process has exited
	from := len(u.ns.states())
	u.waitState(from, "WATCHDOG=1", 5*time.Second)
	_, i := u.waitState(from, "WATCHDOG=1", 5*time.Second)
	u.waitState(i+1, "WATCHDOG=1", 5*time.Second)
	u.sigterm()
}

// Issue 36.2 (P1): `make install` lays out what the unit and an upgrade
// need: the binary at the unit's ExecStart path, the unit, and the
// handover script (sh syntax checked), executable, under the prefix.
func TestMakeInstallLaysOutTheHandover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary through make")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	dest := t.TempDir()
	cmd := exec.Command("make", "-s", "install", "DESTDIR="+dest, "BIN="+filepath.Join(t.TempDir(), "flexway"))
	cmd.Dir = "../.."
	for _, kv := range os.Environ() { // not the make that runs the tests (its jobserver)
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	unit, err := os.ReadFile(filepath.Join(dest, "etc/systemd/system/flexway.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(unit, []byte("\nExecStart=/usr/local/bin/flexway ")) {
		t.Errorf("the installed unit does not start /usr/local/bin/flexway:\n%s", unit)
	}
	for _, f := range []string{"usr/local/bin/flexway", "usr/local/lib/flexway/flexway-handover"} {
		st, err := os.Stat(filepath.Join(dest, f))
		if err != nil || st.Mode()&0o111 == 0 {
			t.Fatalf("/%s not installed executable: %v", f, err)
		}
	}
	if out, err := exec.Command("sh", "-n", filepath.Join(dest, "usr/local/lib/flexway/flexway-handover")).CombinedOutput(); err != nil {
		t.Fatalf("sh -n flexway-handover: %v\n%s", err, out)
	}
}
