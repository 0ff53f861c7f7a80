// TestExamples: each example built, checked, started and signalled as a user
// would, and the flexway process it runs (gateway, startFlexway), shared with
// the other tests that start the binary. What an example declares is read
// in examples_config_test.go; its clients are in examples_clients_test.go.

package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/internal/testkit"
)

// The examples, started as users start them (issue 13.2): the binary is
// built, then for each folder of configs/examples and for the quickstart
// (`make run`): certificates made by make-demo-certs.sh as the example's
// comment says, `flexway -check`, `flexway -config`, a franz-go client
// through each listener the example declares with each kind of identity
// it declares, one record produced and consumed back, the bounded
// administration where a token may administer, SIGHUP (the reload is
// logged, an open client still works), SIGTERM (exit status 0, no panic).

const examplesDir = "../../configs/examples"

// The identity kinds an example may declare.
const (
	kindKey   = "api key"     // auth.api_keys, SASL PLAIN
	kindToken = "token"       // auth.issuers, SASL OAUTHBEARER
	kindCert  = "certificate" // auth.mtls.clients, a client certificate
)

// exampleCase is what an example declares, written here so that an example
// that loses a listener or an identity fails rather than being tested on
// less; the test derives what it connects from the example itself and
// checks that it agrees.
type exampleCase struct {
	listeners []string // "tls", "plaintext"
	kinds     []string // identity kinds, in the order above
	admin     bool     // a token may carry an operation's admin_scope
}

var exampleCases = map[string]exampleCase{
	"quickstart":     {listeners: []string{"plaintext"}, kinds: []string{kindKey}},
	"tls-api-keys":   {listeners: []string{"tls"}, kinds: []string{kindKey}},
	"tls-oauth-mtls": {listeners: []string{"tls"}, kinds: []string{kindToken, kindCert}},
	"mesh-only":      {listeners: []string{"plaintext"}, kinds: []string{kindKey, kindToken}, admin: true},
	"tls-and-mesh":   {listeners: []string{"tls", "plaintext"}, kinds: []string{kindKey, kindCert}},
	"bounded-admin":  {listeners: []string{"tls"}, kinds: []string{kindKey, kindToken}, admin: true},
}

// The topic every example serves, and the tenant the test speaks for.
const (
	exampleTopic  = "orders"
	exampleTenant = "acme"
)

func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts it on every example")
	}
	entries, err := os.ReadDir(examplesDir)
	if err != nil {
		t.Fatal(err)
	}
	folders := map[string]string{"quickstart": "../../configs/quickstart"}
	for _, e := range entries {
		if e.IsDir() {
			folders[e.Name()] = filepath.Join(examplesDir, e.Name())
		}
	}
	names := make([]string, 0, len(folders))
	for n := range folders {
		names = append(names, n)
		if _, ok := exampleCases[n]; !ok {
			t.Errorf("configs/examples/%s has no case in exampleCases (examples_test.go): add one saying its listeners and identities", n)
		}
	}
	for n := range exampleCases {
		if folders[n] == "" {
			t.Errorf("exampleCases names %s, which configs/examples does not hold", n)
		}
	}
	if t.Failed() {
		return
	}
	sort.Strings(names)
	bin := buildFlexway(t)
	script, err := filepath.Abs(filepath.Join(examplesDir, "make-demo-certs.sh"))
	if err != nil {
		t.Fatal(err)
	}
	issuer := testkit.NewIssuer(t)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			runExample(t, bin, script, issuer, name, folders[name], exampleCases[name])
		})
	}
}

// buildFlexway builds cmd/flexway as `make build` does, with the build
// tags given, if any.
func buildFlexway(t *testing.T, tags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "flexway")
	out, err := exec.Command("go", "build", "-tags", strings.Join(tags, ","), "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -tags %q ./cmd/flexway: %v\n%s", strings.Join(tags, ","), err, out)
	}
	return bin
}

func runExample(t *testing.T, bin, script string, issuer *testkit.Issuer, name, src string, want exampleCase) {
	start := time.Now()
	dir := filepath.Join(t.TempDir(), name)
	copyExample(t, src, dir)
	// The certificates, as the example's comment says: ../make-demo-certs.sh .
	if out, err := exec.Command("bash", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("make-demo-certs.sh: %v\n%s", err, out)
	}
	// flexway -check, from the example's folder: as written, then as rewritten.
	check := func(what string) {
		t.Helper()
		cmd := exec.Command(bin, "-check", "-config", "flexway.yaml")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "configuration valid") {
			t.Fatalf("flexway -check, %s: %v\n%s", what, err, out)
		}
	}
	check("the example as written")
	cfgPath := filepath.Join(dir, "flexway.yaml")
	orig, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	ports := map[string]int{}
	cfg := forTestMachine(t, string(orig), issuer, ports)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	snap, err := configs.Load(cfgPath)
	if err != nil {
		t.Fatalf("the example, rewritten for the test machine, does not load: %v\n%s", err, cfg)
	}
	ex := describeExample(t, snap, dir, issuer)
	ex.checkAgainst(t, want, ports)

	check("rewritten for the test machine")
	gw := startFlexway(t, bin, dir)
	gw.waitLog(`"msg":"flexway started"`, 30*time.Second)
	if p, ok := ports["admin"]; ok {
		gw.waitHealthz(p)
	}

	if ex.admin {
		ex.administer(t, ex.listeners[0])
	}
	for _, l := range ex.listeners {
		ex.produceAndConsume(t, l, name)
	}

	// SIGHUP with a client open: the reload is logged, the client still works.
	l := ex.listeners[0]
	prod, cons := ex.sender(l), ex.receiver(l)
	cc := ex.client(t, l, cons, consumerOpts()...)
	defer cc.Close()
	pc := ex.client(t, l, prod)
	defer pc.Close()
	before := fmt.Sprintf("%s before SIGHUP", name)
	produce(t, pc, before)
	consumeUntil(t, cc, before)
	gw.signal(syscall.SIGHUP)
	gw.waitLog("configuration reloaded", 15*time.Second)
	after := fmt.Sprintf("%s after SIGHUP", name)
	produce(t, pc, after)
	consumeUntil(t, cc, after)

	// SIGTERM with the producer still connected (idle). The consumer is
	// closed first: a consumer keeps a Fetch in flight, and the engine's
	// drain waits for in-flight requests up to its 10 s bound.
	cc.Close()
	gw.stop()
	t.Logf("%s: started, served %v with %v, reloaded and stopped in %v", name, ex.listeners, ex.kinds, time.Since(start).Round(time.Millisecond))
}

// copyExample copies the example's files (not its folders: tls/ may hold a
// user's own certificates).
func copyExample(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// gateway is the flexway process, its output captured.
type gateway struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout syncBuffer
	stderr syncBuffer
	done   chan struct{} // closed when the process has exited
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startFlexway starts the built binary bin on dir's flexway.yaml, env
// ("NAME=value") added to the test's environment; it is killed at the
// test's end if still running.
func startFlexway(t *testing.T, bin, dir string, env ...string) *gateway {
	t.Helper()
	gw := &gateway{t: t, done: make(chan struct{})}
	gw.cmd = exec.Command(bin, "-config", "flexway.yaml")
	gw.cmd.Dir = dir
	if len(env) > 0 {
		gw.cmd.Env = append(os.Environ(), env...)
	}
	gw.cmd.Stdout, gw.cmd.Stderr = &gw.stdout, &gw.stderr
	if err := gw.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = gw.cmd.Wait()
		close(gw.done)
	}()
	t.Cleanup(func() {
		select {
		case <-gw.done:
		default:
			_ = gw.cmd.Process.Kill()
			<-gw.done
		}
		if t.Failed() {
			t.Logf("flexway stdout:\n%s\nflexway stderr:\n%s", gw.stdout.String(), gw.stderr.String())
		}
	})
	return gw
}

// waitLog waits until stderr holds s; it fails if flexway exits first.
func (gw *gateway) waitLog(s string, within time.Duration) {
	gw.t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(gw.stderr.String(), s) {
		select {
		case <-gw.done:
			gw.t.Fatalf("flexway exited (%s) before logging %q", gw.cmd.ProcessState, s)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			gw.t.Fatalf("flexway did not log %q within %v", s, within)
		}
	}
}

// waitStdout waits until flexway's standard output (the banner) holds s,
// and returns it.
func (gw *gateway) waitStdout(s string, within time.Duration) string {
	gw.t.Helper()
	deadline := time.Now().Add(within)
	for {
		out := gw.stdout.String()
		if strings.Contains(out, s) {
			return out
		}
		if time.Now().After(deadline) {
			gw.t.Fatalf("flexway did not print %q within %v:\n%s", s, within, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitHealthz waits until the admin endpoint answers /healthz.
func (gw *gateway) waitHealthz(port int) {
	gw.t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.TrimSpace(string(body)) == "ok" {
				return
			}
			err = fmt.Errorf("%s: %q", resp.Status, body)
		}
		if time.Now().After(deadline) {
			gw.t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (gw *gateway) signal(sig syscall.Signal) {
	gw.t.Helper()
	if err := gw.cmd.Process.Signal(sig); err != nil {
		gw.t.Fatalf("%v: %v", sig, err)
	}
}

// stop sends SIGTERM: flexway drains and exits 0, with no panic on stderr.
func (gw *gateway) stop() {
	gw.t.Helper()
	gw.signal(syscall.SIGTERM)
	select {
	case <-gw.done:
	case <-time.After(20 * time.Second):
		gw.t.Fatal("flexway did not exit within 20 s of SIGTERM")
	}
	if code := gw.cmd.ProcessState.ExitCode(); code != 0 {
		gw.t.Fatalf("flexway exited with status %d after SIGTERM", code)
	}
	if e := gw.stderr.String(); strings.Contains(e, "panic") || strings.Contains(e, "goroutine ") {
		gw.t.Fatalf("flexway's stderr holds a panic:\n%s", e)
	}
}
