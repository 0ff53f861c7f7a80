// The gateway of the fault tests: the built binary, started on the
// quickstart's contract and keys with its upstream on a faults.Cluster,
// its log and its /metrics read as an operator reads them.
package faults

import (
	"bytes"
	"context"
	"fmt"
	"io"
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
)

// binary is the flexway binary TestMain built, shared by the tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "flexway-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "flexway")
	if out, err := exec.Command("go", "build", "-o", binary, "github.com/flexway/flexway/cmd/flexway").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/flexway: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// gwConfig is a gateway's folder: the quickstart's contract and key store,
// a flexway.yaml on free ports whose upstream is a cluster's proxies.
type gwConfig struct {
	dir  string
	base int // the bootstrap port; nodes 0-2 at base+1..base+3, the admin endpoint at base+4
}

// gwExtra is what a test adds to the gateway's flexway.yaml: lines under
// listeners.kafka (4 spaces of indent), under server (2 spaces), and at the
// top level; and a prefix of the contract's channel addresses (the
// physical topics "<prefix>acme.orders", groups "<prefix>acme.~g.<id>").
type gwExtra struct{ listener, server, top, prefix string }

// writeConfig writes the gateway's files for the upstream brokers, with x.
func writeConfig(t *testing.T, upstream []string, x gwExtra) gwConfig {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"asyncapi.yaml", "api-keys.yaml"} {
		b, err := os.ReadFile(filepath.Join("../../configs/quickstart", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "asyncapi.yaml" {
			b = []byte(strings.ReplaceAll(string(b), `address: "{tenant}.`, `address: "`+x.prefix+`{tenant}.`))
		}
		testkit.WriteFile(t, dir, f, b)
	}
	base := testkit.FreePorts(t, 5)
	brokers := `"` + strings.Join(upstream, `", "`) + `"`
	testkit.WriteFile(t, dir, "flexway.yaml", []byte(fmt.Sprintf(`version: 1
contracts:
  asyncapi: ./asyncapi.yaml
upstreams:
  events: { protocol: kafka, brokers: [%s] }
auth:
  api_keys:
    store: "file:./api-keys.yaml"
listeners:
  kafka:
%s    plaintext:
      mesh_only: true
      advertised_host: 127.0.0.1
      bind_host: 127.0.0.1
      clusters:
        shop: { ports: { from: %d, to: %d }, first_node_id: 0 }
server:
  admin:
    address: 127.0.0.1:%d
%s%s`, brokers, x.listener, base, base+3, base+4, x.server, x.top)))
	return gwConfig{dir: dir, base: base}
}

// quickstartKey is the secret of the quickstart's key id.
func quickstartKey(t *testing.T, id string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../configs/quickstart", id+".key"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// gateway is one flexway process.
type gateway struct {
	t    *testing.T
	cfg  gwConfig
	cmd  *exec.Cmd
	log  lockedBuf
	done chan struct{} // closed when the process has exited
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startGateway starts the binary on cfg and waits until its admin endpoint
// says it is healthy; it is killed at the test's end if still running.
func startGateway(t *testing.T, cfg gwConfig) *gateway {
	t.Helper()
	gw := &gateway{t: t, cfg: cfg, done: make(chan struct{})}
	gw.cmd = exec.Command(binary, "-config", "flexway.yaml")
	gw.cmd.Dir = cfg.dir
	gw.cmd.Stdout, gw.cmd.Stderr = io.Discard, &gw.log
	if err := gw.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = gw.cmd.Wait()
		close(gw.done)
	}()
	t.Cleanup(func() {
		gw.kill()
		if t.Failed() {
			t.Logf("flexway log:\n%s", tail(gw.log.String(), 6000))
		}
	})
	waitFor(t, 20*time.Second, "flexway healthy", func() bool {
		select {
		case <-gw.done:
			t.Fatalf("flexway exited:\n%s", gw.log.String())
		default:
		}
		resp, err := http.Get(gw.admin("/healthz"))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return gw
}

// kill ends the process with SIGKILL (kill -9) and waits for its end.
func (gw *gateway) kill() {
	select {
	case <-gw.done:
		return
	default:
	}
	_ = gw.cmd.Process.Signal(syscall.SIGKILL)
	<-gw.done
}

func (gw *gateway) admin(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", gw.cfg.base+4, path)
}

func (gw *gateway) bootstrap() string { return fmt.Sprintf("127.0.0.1:%d", gw.cfg.base) }

// metrics is the gateway's /metrics text.
func (gw *gateway) metrics() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, gw.admin("/metrics"), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		gw.t.Fatalf("/metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		gw.t.Fatalf("/metrics: %v", err)
	}
	return string(b)
}

// lines counts the log lines holding s.
func (gw *gateway) lines(s string) int { return strings.Count(gw.log.String(), s) }

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// waitFor polls cond until it holds, failing the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
