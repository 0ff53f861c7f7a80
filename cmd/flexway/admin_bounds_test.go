package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// adminQuickstart writes the quickstart's configuration to a folder of the
// test's on free ports: the Kafka ports from base, the admin endpoint at
// adminPort.
func adminQuickstart(t *testing.T, base, adminPort int) string {
	t.Helper()
	dir := copyQuickstart(t)
	writeAdminQuickstart(t, dir, base, adminPort)
	return dir
}

func writeAdminQuickstart(t *testing.T, dir string, base, adminPort int) {
	t.Helper()
	cfg, err := os.ReadFile("../../configs/quickstart/flexway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	admin := fmt.Sprintf("127.0.0.1:%d", adminPort)
	c := strings.NewReplacer("from: 19092, to: 19095", fmt.Sprintf("from: %d, to: %d", base, base+3),
		"127.0.0.1:9464", admin).Replace(string(cfg))
	if !strings.Contains(c, admin) {
		t.Fatal("the quickstart changed: the test's replacements no longer apply")
	}
	writeTestFile(t, filepath.Join(dir, "flexway.yaml"), []byte(c))
}

// nofileWrapper is a script that runs bin with its descriptor limit, soft
// and hard, at n (a hard limit is lowered without privilege; Go raises
// only the soft one to the hard one). It execs: the gateway keeps its pid.
func nofileWrapper(t *testing.T, bin string, n int) string {
	t.Helper()
	w := filepath.Join(t.TempDir(), "flexway-nofile")
	script := fmt.Sprintf("#!/bin/sh\nulimit -n %d || exit 97\nexec %q \"$@\"\n", n, bin)
	if err := os.WriteFile(w, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

// adminConn is a keep-alive connection to the admin endpoint.
type adminConn struct {
	c    net.Conn
	r    *bufio.Reader
	sent time.Time // before its request was written
}

// get sends one keep-alive request and reads its answer; the error is the
// read's (EOF or reset: the gateway closed it).
func (a *adminConn) get(method, path string) (*http.Response, string, error) {
	a.sent = time.Now()
	fmt.Fprintf(a.c, "%s %s HTTP/1.1\r\nHost: flexway\r\n\r\n", method, path) // a write's error shows in the read
	return a.read(method)
}

func (a *adminConn) read(method string) (*http.Response, string, error) {
	_ = a.c.SetReadDeadline(time.Now().Add(15 * time.Second))
	resp, err := http.ReadResponse(a.r, &http.Request{Method: method})
	if err != nil {
		return nil, "", err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body), err
}

// closedByPeer reports whether err is what a client reads on a connection
// the gateway closed: EOF or a reset.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// holdAdmin opens n connections to addr at once, then sends GET /healthz
// on each and reads the answers: the ones answered ok are held (and
// returned), the others must have been closed by the gateway; one neither
// answered nor closed within 15 s fails the test.
func holdAdmin(t *testing.T, addr string, n int) (held []*adminConn, refused int) {
	t.Helper()
	all := make([]*adminConn, 0, n)
	t.Cleanup(func() {
		for _, a := range all {
			a.c.Close()
		}
	})
	for i := 0; i < n; i++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d of %d: %v", i+1, n, err)
		}
		all = append(all, &adminConn{c: c, r: bufio.NewReader(c)})
	}
	for _, a := range all {
		a.sent = time.Now()
		fmt.Fprintf(a.c, "GET /healthz HTTP/1.1\r\nHost: flexway\r\n\r\n")
	}
	for i, a := range all {
		resp, body, err := a.read(http.MethodGet)
		switch {
		case err == nil && resp.StatusCode == http.StatusOK && body == "ok\n":
			held = append(held, a)
		case err != nil && closedByPeer(err):
			refused++
		default:
			t.Fatalf("connection %d of %d: neither answered ok nor closed by the gateway: %v %v %q", i+1, n, resp, err, body)
		}
	}
	return held, refused
}

// waitAdmin waits until GET /healthz on a connection of its own (closed
// after, by the gateway: Connection: close, read to that close) answers ok.
func waitAdmin(t *testing.T, gw *gateway, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			a := &adminConn{c: c, r: bufio.NewReader(c)}
			fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: flexway\r\nConnection: close\r\n\r\n")
			resp, body, rerr := a.read(http.MethodGet)
			if rerr == nil {
				// to the gateway's close: its place is given back by then
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				_, _ = io.Copy(io.Discard, a.r)
			}
			c.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK && body == "ok\n" {
				return
			}
			err = fmt.Errorf("%v %v %q", resp, rerr, body)
		}
		select {
		case <-gw.done:
			t.Fatalf("flexway exited (%s) before its admin endpoint answered", gw.cmd.ProcessState)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET http://%s/healthz: %v", addr, err)
		}
	}
}

// openFDs counts the descriptors process pid holds.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// nofileLimit reads process pid's "Max open files" soft and hard limits.
func nofileLimit(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			return strings.Join(strings.Fields(rest)[:2], " ")
		}
	}
	t.Fatalf("no Max open files in /proc/%d/limits", pid)
	return ""
}

// Issue 33.2 (O4, L3, P1), on the built binary: the gateway at a
// 1,024-descriptor limit (soft and hard), 1,100 keep-alive connections
// opened at once to its admin endpoint, each sending GET /healthz. 64 are
// answered and held, idle; the 1,036 others are closed by the gateway at
// once (EOF or reset), its descriptors grow by no more than the 64; a
// franz-go client at its defaults produces and consumes through the Kafka
// port meanwhile. Then the held ones are closed by the gateway 30 s after
// their answer, not before, and the endpoint holds 64 again.
func TestAdminFloodLeavesKafkaPort(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and floods its admin endpoint")
	}
	const flood, limit = 1100, 1024
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur < flood+512 {
		t.Skipf("the test holds %d connections: its descriptor limit is %d", flood, rl.Cur)
	}
	bin := buildFlexway(t)
	base := testkit.FreePorts(t, 5)
	dir := adminQuickstart(t, base, base+4)
	gw := startFlexway(t, nofileWrapper(t, bin, limit), dir)
	addr := fmt.Sprintf("127.0.0.1:%d", base+4)
	waitAdmin(t, gw, addr)
	pid := gw.cmd.Process.Pid
	if got := nofileLimit(t, pid); got != fmt.Sprintf("%d %d", limit, limit) {
		t.Fatalf("flexway's descriptor limit is %q, want %d %d", got, limit, limit)
	}
	before := openFDs(t, pid)

	start := time.Now()
	held, refused := holdAdmin(t, addr, flood)
	t.Logf("%d connections: %d held, %d closed by the gateway, in %v", flood, len(held), refused, time.Since(start).Round(time.Millisecond))
	if len(held) != adminMaxConnections || refused != flood-adminMaxConnections {
		t.Fatalf("%d held and %d closed, want %d and %d", len(held), refused, adminMaxConnections, flood-adminMaxConnections)
	}
	peak := openFDs(t, pid)
	t.Logf("flexway's descriptors: %d before, %d with the connections held", before, peak)
	if peak-before > adminMaxConnections+2 {
		t.Errorf("flexway's descriptors went from %d to %d: more than the %d held", before, peak, adminMaxConnections)
	}
	kafkaRoundTrip(t, base)
	if n := strings.Count(gw.stderr.String(), "admin endpoint connection refused"); n < 1 || n > int(time.Since(start)/time.Second)+2 {
		t.Errorf("%d lines \"admin endpoint connection refused\" for %d connections in %v: want one a second at most", n, refused, time.Since(start))
	}
	if strings.Contains(gw.stderr.String(), "too many open files") {
		t.Error("flexway ran out of descriptors")
	}

	// The held connections, idle since their answer, closed by the gateway
	// at the idle timeout: not before, and the places are given back.
	for i, a := range held {
		_ = a.c.SetReadDeadline(a.sent.Add(adminIdleTimeout + 30*time.Second))
		_, err := a.r.ReadByte()
		closed := time.Now()
		if !closedByPeer(err) {
			t.Fatalf("held connection %d: %v, want it closed by the gateway", i, err)
		}
		if idle := closed.Sub(a.sent); idle < adminIdleTimeout {
			t.Fatalf("held connection %d closed %v after its request, before the %v idle timeout", i, idle, adminIdleTimeout)
		}
	}
	t.Logf("the %d held connections closed by the gateway %v after the flood began", len(held), time.Since(start).Round(time.Millisecond))
	waitAdmin(t, gw, addr)
	again, refused := holdAdmin(t, addr, adminMaxConnections+1)
	if len(again) != adminMaxConnections || refused != 1 {
		t.Fatalf("after the idle timeout: %d held and %d closed of %d, want %d and 1", len(again), refused, adminMaxConnections+1, adminMaxConnections)
	}
	if n := openFDs(t, pid); n-before > adminMaxConnections+2 {
		t.Errorf("flexway's descriptors: %d before the flood, %d with %d held again", before, n, adminMaxConnections)
	}
	gw.stop()
}

// kafkaRoundTrip produces a record through the quickstart's gateway on
// base with franz-go at its defaults and reads it back, within 30 s.
func kafkaRoundTrip(t *testing.T, base int) {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	auth := kgo.SASL(plain.Auth{User: "acme-app", Pass: quickstartKey(t, "acme-app")}.AsMechanism())
	seed := kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", base))
	p, err := kgo.NewClient(seed, auth, kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	value := fmt.Sprintf("admin flood %d", time.Now().UnixNano())
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatalf("produce during the admin flood: %v", err)
	}
	c, err := kgo.NewClient(seed, auth, kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for found := false; !found; {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the record produced was not read back within 30 s")
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch during the admin flood: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == value })
	}
	t.Logf("produced and read back through the Kafka port in %v", time.Since(start).Round(time.Millisecond))
}

// Issue 33.2 (O4), on the built binary: the admin endpoint answers GET and
// HEAD only; every other method, on every path, is 405 with `Allow: GET,
// HEAD`. A reload that moves the endpoint (SIGHUP) keeps its bounds: at
// the new address the same answers, a request's header not finished
// within 5 s closes its connection, and 64 connections are held, the 65th
// closed.
func TestAdminReadOnlyAndMovedKeepsBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildFlexway(t)
	base := testkit.FreePorts(t, 6)
	dir := adminQuickstart(t, base, base+4)
	gw := startFlexway(t, bin, dir)
	first := fmt.Sprintf("127.0.0.1:%d", base+4)
	waitAdmin(t, gw, first)
	checkReadOnly(t, first)

	writeAdminQuickstart(t, dir, base, base+5)
	gw.signal(syscall.SIGHUP)
	gw.waitLog(`"msg":"admin endpoint moved"`, 15*time.Second)
	portClosed(t, base+4)
	moved := fmt.Sprintf("127.0.0.1:%d", base+5)
	waitAdmin(t, gw, moved)
	checkReadOnly(t, moved)

	// A request's header begun and never finished: closed at 5 s.
	dialed := time.Now()
	c, err := net.Dial("tcp", moved)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: flexway\r\n")
	_ = c.SetReadDeadline(time.Now().Add(adminReadHeaderTimeout + 30*time.Second))
	if _, err := io.ReadAll(c); err != nil && !closedByPeer(err) {
		t.Fatalf("a header left unfinished: %v, want the connection closed by the gateway", err)
	}
	if d := time.Since(dialed); d < adminReadHeaderTimeout {
		t.Fatalf("a header left unfinished: closed after %v, before the %v read-header timeout", d, adminReadHeaderTimeout)
	} else {
		t.Logf("a header left unfinished: closed after %v", d.Round(time.Millisecond))
	}

	held, refused := holdAdmin(t, moved, adminMaxConnections+1)
	if len(held) != adminMaxConnections || refused != 1 {
		t.Fatalf("after the move: %d held and %d closed of %d, want %d and 1", len(held), refused, adminMaxConnections+1, adminMaxConnections)
	}
	gw.stop()
}

// checkReadOnly asks addr every path with every method: GET and HEAD are
// answered, the others refused with 405 and `Allow: GET, HEAD`.
func checkReadOnly(t *testing.T, addr string) {
	t.Helper()
	cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 15 * time.Second}
	do := func(method, path string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, path := range []string{"/", "/healthz", "/metrics", "/config", "/nothing-here"} {
		for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"} {
			resp, _ := do(m, path)
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %s, Allow %q; want 405, Allow \"GET, HEAD\"", m, path, resp.Status, resp.Header.Get("Allow"))
			}
		}
	}
	for _, path := range []string{"/", "/healthz", "/metrics", "/config"} {
		for _, m := range []string{"GET", "HEAD"} {
			resp, body := do(m, path)
			if resp.StatusCode != http.StatusOK || (m == "HEAD") != (body == "") {
				t.Errorf("%s %s: %s, %d bytes; want 200 (HEAD without a body)", m, path, resp.Status, len(body))
			}
		}
	}
	// `OPTIONS *`, which net/http would answer 200 by itself.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a := &adminConn{c: c, r: bufio.NewReader(c)}
	resp, _, err := a.get("OPTIONS", "*")
	if err != nil || resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("OPTIONS *: %v %v; want 405, Allow \"GET, HEAD\"", resp, err)
	}
}

// The built binary at a 1,024-descriptor limit (soft and hard) with the
// quickstart's max_connections (4,096: 8,448 descriptors asked) says so
// once started, with the figures; at the test's own limit it says nothing.
func TestDescriptorLimitBelowMaxConnectionsSaid(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildFlexway(t)
	const line = `"msg":"descriptor limit below what max_connections asks`
	base := testkit.FreePorts(t, 5)
	gw := startFlexway(t, nofileWrapper(t, bin, 1024), adminQuickstart(t, base, base+4))
	gw.waitLog(`"msg":"flexway started"`, 30*time.Second)
	gw.waitLog(line, 10*time.Second)
	if want := `"max_connections":4096,"descriptors_needed":8448,"limit":1024`; !strings.Contains(gw.stderr.String(), want) {
		t.Fatalf("the line lacks %s:\n%s", want, gw.stderr.String())
	}
	gw.stop()

	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur < descriptorsNeeded(4096) {
		return // the second half needs a limit above what it asks
	}
	base = testkit.FreePorts(t, 5)
	gw = startFlexway(t, bin, adminQuickstart(t, base, base+4))
	gw.waitLog(`"msg":"flexway started"`, 30*time.Second)
	gw.stop() // all it logged is in
	if strings.Contains(gw.stderr.String(), line) {
		t.Fatalf("said at a limit of %d:\n%s", rl.Cur, gw.stderr.String())
	}
}
