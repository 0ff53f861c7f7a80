package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The Go proxy (issue 23.6): grepplabs/kafka-proxy, another Kafka proxy
// written in Go, as a fourth path beside direct, the splice relay and the
// gateway. bench/run gives its binary (-goproxy-bin, empty: the path is
// left out), the address it listens on (-goproxy, 29199) and the broker's
// GOPROXY listener it proxies (-goproxy-target, 29198: SASL_PLAINTEXT,
// PLAIN, the broker's user, advertising its own address). kafka-proxy
// passes the client's SaslHandshake v1 and SaslAuthenticate through to the
// broker (it authenticates nobody itself without --auth-local-enable), so
// its clients authenticate as the relay's do, the broker's user on a
// listener of the same settings as RELAY; it rewrites the broker's address
// in Metadata and FindCoordinator answers to its own (its
// --bootstrap-server-mapping). A run that fails through it is recorded as
// failed (result.failed), not fatal: the table says so.

// goProxy is the Go proxy's process and its settings.
type goProxy struct {
	bin     string // the kafka-proxy binary
	version string // what `kafka-proxy version` prints
	boot    string // where it listens (the address its clients bootstrap to)
	target  string // the broker's GOPROXY listener
	cmd     *exec.Cmd
	done    chan struct{}
	log     string
}

// goProxyArgs are kafka-proxy's arguments: one static listener for the
// broker (whose only advertised address is target), no dynamic listeners,
// no HTTP endpoint (its default is 0.0.0.0:9080); the rest at its defaults.
func goProxyArgs(boot, target string) []string {
	return []string{"server",
		"--bootstrap-server-mapping", target + "," + boot,
		"--dynamic-listeners-disable",
		"--default-listener-ip", "127.0.0.1",
		"--http-disable",
		"--log-level", "warning"}
}

// goProxyLabel names the path in the tables.
func (h *harness) goProxyLabel() string {
	v := "?"
	if h.gp != nil && h.gp.version != "" {
		v = h.gp.version
	}
	return "Go proxy (kafka-proxy " + v + ")"
}

// setupGoProxy reads the Go proxy's version and puts the path in paths;
// without a binary the path stays out.
func (h *harness) setupGoProxy(bin, boot, target string) {
	if bin == "" {
		paths = withoutPath(paths, goproxy)
		h.say("the Go proxy is left out (no -goproxy-bin)")
		return
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		die("%s version: %v\n%s", bin, err, out)
	}
	h.gp = &goProxy{bin: bin, version: strings.TrimSpace(string(out)), boot: boot, target: target}
	h.say("the Go proxy: %s %s, %s -> %s", bin, h.gp.version, boot, target)
}

func withoutPath(ps []string, drop string) []string {
	var out []string
	for _, p := range ps {
		if p != drop {
			out = append(out, p)
		}
	}
	return out
}

// startGoProxy starts kafka-proxy and waits until it accepts.
func (h *harness) startGoProxy() {
	if h.gp == nil {
		return
	}
	h.stopGoProxy()
	g := h.gp
	g.log = filepath.Join(h.out, fmt.Sprintf("kafka-proxy-%d.log", time.Now().UnixNano()))
	g.cmd, g.done = h.startHop("kafka-proxy", g.log, g.boot, 15*time.Second, append([]string{g.bin}, goProxyArgs(g.boot, g.target)...)...)
	h.say("kafka-proxy %s up (pid %d) on %s -> %s", g.version, g.cmd.Process.Pid, g.boot, g.target)
}

func (h *harness) stopGoProxy() {
	if h.gp == nil || h.gp.cmd == nil || h.gp.cmd.Process == nil {
		return
	}
	stopProc(h.gp.cmd, h.gp.done)
	h.gp.cmd = nil
}

func (h *harness) goProxyPID() int {
	if h.gp == nil || h.gp.cmd == nil || h.gp.cmd.Process == nil {
		return 0
	}
	return h.gp.cmd.Process.Pid
}

func (h *harness) goProxyAlive() bool {
	if h.gp == nil || h.gp.cmd == nil {
		return false
	}
	select {
	case <-h.gp.done:
		return false
	default:
		return true
	}
}

// goProxyFailed records a run through the Go proxy that failed (err, or
// the proxy died) as failed, with the reason in its note, and restarts
// the proxy if it died, so that the next runs go on.
func (h *harness) goProxyFailed(scenario string, rep int, wall float64, err error) result {
	reason := "kafka-proxy died"
	if err != nil {
		reason = firstLine(err.Error())
	}
	if h.gp.cmd != nil && !h.goProxyAlive() {
		data, _ := os.ReadFile(h.gp.log)
		reason += "; kafka-proxy died (log tail: " + firstLine(tail(strings.TrimSpace(string(data)), 300)) + ")"
		h.startGoProxy()
	}
	r := result{scenario: scenario, path: goproxy, rep: rep, wall: wall, failed: true,
		p50: nan, p99: nan, p999: nan, later: nan, note: "FAILED: " + reason}
	h.record(r)
	h.say("  %-48s %-7s run %d: FAILED: %s", scenario, goproxy, rep, reason)
	return r
}

// firstLine is s's first line, at most 200 characters.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// failures is what failed on path p in sc: "k of n runs failed" (n: the
// runs of sc on p, failed or not), "" when none did.
func (h *harness) failures(sc, p string) string {
	n, k := 0, 0
	for _, r := range h.results {
		if r.scenario == sc && r.path == p {
			n++
			if r.failed {
				k++
			}
		}
	}
	if k == 0 {
		return ""
	}
	return fmt.Sprintf("failed %d of %d runs", k, n)
}

// failureNotes lists the reasons of the failed runs of the scenarios
// that of accepts, one line per scenario and path (the first reason), for
// under a table.
func (h *harness) failureNotes(of func(sc string) bool) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, r := range h.results {
		if !r.failed || !of(r.scenario) || seen[r.scenario+"\t"+r.path] {
			continue
		}
		seen[r.scenario+"\t"+r.path] = true
		if b.Len() == 0 {
			fmt.Fprintf(&b, "\nFailed runs (the first reason of each workload; every run's in runs.tsv):\n")
		}
		fmt.Fprintf(&b, "- %s, %s: %s\n", r.scenario, r.path, strings.TrimPrefix(r.note, "FAILED: "))
	}
	return b.String()
}
