package hostile

// The gateway under attack: the built binary on the quickstart's files with
// the budgets, its brokers a kfake cluster of the test's own (so that
// the gateway's RSS is the gateway's, not the records of an embedded broker),
// under a 1,024-descriptor limit, its output counted.

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kfake"
)

const (
	quickstart = "../../configs/quickstart"
	// fdLimit is the gateway's descriptor limit, soft and hard (the hard one
	// too: Go raises its soft limit to the hard one at start).
	fdLimit = 1024
	// budgets are the plain configuration; every other bound is
	// the seeds' default.
	budgets = "    max_in_flight_bytes: 8MiB\n" +
		"    max_tenant_in_flight_bytes: 32MiB\n" +
		"    max_total_in_flight_bytes: 256MiB\n" +
		"    max_request_bytes: 16MiB\n"
	mib = 1 << 20
)

// gateway is one running flexway process.
type gateway struct {
	t     testing.TB
	dir   string // its folder: flexway.yaml, asyncapi.yaml, api-keys.yaml
	cfg   []byte // flexway.yaml as started
	cmd   *exec.Cmd
	done  chan struct{}
	base  int // bootstrap port; broker n at base+1+n
	admin string
	out   *logCount // stdout and stderr together
	keys  map[string]string
	k     *kfake.Cluster
}

// logCount counts the bytes the gateway writes and keeps the last of them
// (from 1 to 2 MiB: enough for the lines the attacks look for).
type logCount struct {
	mu       sync.Mutex
	n        int64
	kept     []byte
	keptFrom int64 // the offset of kept[0] in the output
}

const keep = 1 << 20

func (l *logCount) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n += int64(len(p))
	l.kept = append(l.kept, p...)
	if over := len(l.kept) - 2*keep; over > 0 {
		cut := over + keep
		l.kept = append(l.kept[:0:0], l.kept[cut:]...)
		l.keptFrom += int64(cut)
	}
	return len(p), nil
}

// Bytes is the count written so far.
func (l *logCount) Bytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// since is what is kept of the output from offset from on.
func (l *logCount) since(from int64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := max(from-l.keptFrom, 0)
	if i >= int64(len(l.kept)) {
		return ""
	}
	return string(l.kept[i:])
}

// waitLog waits until the output after offset from holds every one of
// want on one line.
func (g *gateway) waitLog(from int64, within time.Duration, want ...string) error {
	deadline := time.Now().Add(within)
	for {
		for _, line := range strings.Split(g.out.since(from), "\n") {
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(line, w)
			}
			if ok {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no line with %q in the log within %v", want, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// buildFlexway builds ./cmd/flexway into a temporary folder.
func buildFlexway(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "flexway")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/flexway").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/flexway: %v\n%s", err, out)
	}
	return bin
}

// startGateway writes the configuration and starts bin on it; it waits
// until /healthz answers. The process is killed at the test's end.
func startGateway(t testing.TB, bin string) *gateway {
	t.Helper()
	k, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(3, "acme.orders", "globex.orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	g := &gateway{t: t, dir: t.TempDir(), done: make(chan struct{}), out: &logCount{}, keys: map[string]string{}, k: k}
	for _, f := range []string{"asyncapi.yaml", "api-keys.yaml"} {
		copyFile(t, filepath.Join(quickstart, f), filepath.Join(g.dir, f))
	}
	for _, id := range []string{"acme-app", "globex-app"} {
		b, err := os.ReadFile(filepath.Join(quickstart, id+".key"))
		if err != nil {
			t.Fatal(err)
		}
		g.keys[id] = strings.TrimSpace(string(b))
	}
	g.base = testkit.FreePorts(t, 5)
	g.admin = fmt.Sprintf("127.0.0.1:%d", g.base+4)
	g.cfg = g.config(t)
	if err := os.WriteFile(filepath.Join(g.dir, "flexway.yaml"), g.cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	// sh's ulimit -n sets both limits; exec keeps the pid.
	g.cmd = exec.Command("sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, fdLimit), bin, "-config", "flexway.yaml")
	g.cmd.Dir = g.dir
	g.cmd.Stdout, g.cmd.Stderr = g.out, g.out
	g.cmd.SysProcAttr = dieWithTest()
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.cmd.Wait(); close(g.done) }()
	t.Cleanup(g.kill)
	g.waitHealthy(30 * time.Second)
	return g
}

// config is the quickstart's flexway.yaml on the test's ports and brokers,
// with the budgets and an audit trail of refusals.
func (g *gateway) config(t testing.TB) []byte {
	t.Helper()
	orig, err := os.ReadFile(filepath.Join(quickstart, "flexway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	brokers := fmt.Sprintf("brokers: [%q, %q, %q]", g.k.ListenAddrs()[0], g.k.ListenAddrs()[1], g.k.ListenAddrs()[2])
	c := strings.NewReplacer(
		"embedded: { brokers: 3 }", brokers,
		"from: 19092, to: 19095", fmt.Sprintf("from: %d, to: %d", g.base, g.base+3),
		"127.0.0.1:9464", g.admin,
		"  kafka:\n", "  kafka:\n"+budgets,
	).Replace(string(orig)) + "audit:\n  decisions: refusals\n"
	for _, want := range []string{brokers, g.admin, budgets} {
		if !strings.Contains(c, want) {
			t.Fatalf("the quickstart changed: %q no longer applies", want)
		}
	}
	return []byte(c)
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// alive says whether the process still runs.
func (g *gateway) alive() bool {
	select {
	case <-g.done:
		return false
	default:
		return true
	}
}

// healthy says whether /healthz answers 200 within 2 s.
func (g *gateway) healthy() bool {
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get("http://" + g.admin + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (g *gateway) waitHealthy(within time.Duration) {
	g.t.Helper()
	deadline := time.Now().Add(within)
	for !g.healthy() {
		if !g.alive() || time.Now().After(deadline) {
			g.t.Fatalf("flexway not healthy within %v (alive %v):\n%s", within, g.alive(), g.out.since(0))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (g *gateway) pid() int { return g.cmd.Process.Pid }

// kafka is the bootstrap address.
func (g *gateway) kafka() string { return fmt.Sprintf("127.0.0.1:%d", g.base) }

// hup sends SIGHUP (reload flexway.yaml).
func (g *gateway) hup() error { return g.cmd.Process.Signal(syscall.SIGHUP) }

func (g *gateway) kill() {
	if g.alive() {
		_ = g.cmd.Process.Kill()
		<-g.done
	}
	if g.t.Failed() {
		out := g.out.since(0)
		if len(out) > 64<<10 {
			out = out[len(out)-64<<10:]
		}
		g.t.Logf("flexway's output (its end):\n%s", out)
	}
}
