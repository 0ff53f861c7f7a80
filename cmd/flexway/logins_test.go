package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A client's SASL PLAIN login, byte by byte (a guesser needs no library):
// SaslHandshake v1, then SaslAuthenticate v1. from is the local address
// to dial from ("" for any). It returns SaslAuthenticate's error code and
// how long its answer took.
func plainLogin(gwAddr, from, user, pass string) (int16, time.Duration, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", gwAddr)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("guesser"))
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	if _, err := c.Write(f.AppendRequest(nil, hs, 1)); err != nil {
		return 0, 0, err
	}
	hsr := kmsg.NewPtrSASLHandshakeResponse()
	hsr.Version = 1
	if err := readAnswer(c, hsr); err != nil {
		return 0, 0, fmt.Errorf("SaslHandshake: %w", err)
	}
	if hsr.ErrorCode != 0 {
		return 0, 0, fmt.Errorf("SaslHandshake: %v", kerr.ErrorForCode(hsr.ErrorCode))
	}
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = 1, []byte("\x00"+user+"\x00"+pass)
	start := time.Now()
	if _, err := c.Write(f.AppendRequest(nil, req, 2)); err != nil {
		return 0, 0, err
	}
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.Version = 1
	if err := readAnswer(c, resp); err != nil {
		return 0, time.Since(start), fmt.Errorf("SaslAuthenticate: %w", err)
	}
	return resp.ErrorCode, time.Since(start), nil
}

// readAnswer reads one answer frame (a non-flexible header) into resp.
func readAnswer(c net.Conn, resp kmsg.Response) error {
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, b); err != nil {
		return err
	}
	if len(b) < 4 {
		return io.ErrUnexpectedEOF
	}
	return resp.ReadFrom(b[4:])
}

// metricsText reads the gateway's /metrics.
func metricsText(t *testing.T, port int) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sumWhere sums the samples of family name whose line holds every one of
// labels (`api="SaslAuthenticate"`).
func sumWhere(text, name string, labels ...string) float64 {
	var n float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); ok && err == nil {
			n += v
		}
	}
	return n
}

// waitFor polls cond until it holds, or fails after within.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// loginGateway starts the built binary on the quickstart, with audit
// when audited; it returns the gateway, its bootstrap and admin ports.
func loginGateway(t *testing.T, audited bool) (*gateway, int, int) {
	t.Helper()
	bin := buildFlexway(t)
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "acme.orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	dir, base, _ := quickstartOn(t, k, "")
	if audited {
		p := filepath.Join(dir, "flexway.yaml")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, p, append(b, "audit:\n  decisions: refusals\n"...))
	}
	gw := startFlexway(t, bin, dir)
	gw.waitLog(`"msg":"flexway started"`, 30*time.Second)
	gw.waitHealthz(base + 4)
	return gw, base, base + 4
}

// Issue 33.3 (O2, O3), on the built binary with audit on: 2,000 refused
// PLAIN logins, each naming a 60 KiB user, from 2,000 addresses (so that
// no address is slowed: the bound on what is written is the subject),
// write at most 1 MiB of log and audit; every refusal is counted in
// flexway_kafka_requests_total, every audit record written or counted as
// left out; the user name is written cut and marked.
func TestRefusedLoginFloodWritesBoundedLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and sends 120 MiB of logins")
	}
	gw, boot, admin := loginGateway(t, true)
	addr := fmt.Sprintf("127.0.0.1:%d", boot)
	before := len(gw.stderr.String())
	user := strings.Repeat("u", 60<<10)
	const logins, workers = 2000, 32
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < logins; i = next.Add(1) - 1 {
				from := fmt.Sprintf("127.1.%d.%d", i/250, i%250+1) // an address each (Linux routes 127/8 to lo)
				code, _, err := plainLogin(addr, from, user, "not-a-key")
				if err != nil || code != kerr.SaslAuthenticationFailed.Code {
					if failed.Add(1) == 1 {
						t.Errorf("login %d from %s: code %d, %v; want SASL_AUTHENTICATION_FAILED", i, from, code, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	if failed.Load() > 0 {
		t.Fatalf("%d of %d logins not answered SASL_AUTHENTICATION_FAILED", failed.Load(), logins)
	}
	// Every refusal counted; every audit record written or left out (counted).
	var text string
	waitFor(t, 20*time.Second, "2,000 refusals counted, their audit records accounted for", func() bool {
		text = metricsText(t, admin)
		refused := sumWhere(text, "flexway_kafka_requests_total", `api="SaslAuthenticate"`, `decision="refused"`, `cause="authentication"`)
		audited := sumWhere(text, "flexway_kafka_audit_records_total") + sumWhere(text, "flexway_kafka_audit_unauthenticated_dropped_total")
		return refused == logins && audited == logins
	})
	// The audit says how many lines it left out on the next line it lets
	// through: a flood within one second has none after it; one more
	// refused login (an address of its own each) once the second is past.
	extra := 0
	waitFor(t, 10*time.Second, "an audit line saying lines_dropped", func() bool {
		if strings.Contains(gw.stderr.String()[before:], `"lines_dropped"`) {
			return true
		}
		extra++
		_, _, _ = plainLogin(addr, fmt.Sprintf("127.2.0.%d", extra%250+1), user, "not-a-key")
		return false
	})
	written := len(gw.stderr.String()) - before
	out := gw.stderr.String()[before:]
	limited := sumWhere(text, "flexway_kafka_audit_unauthenticated_dropped_total")
	t.Logf("%d refused logins of 60 KiB users in %v: %d bytes of log and audit; audit lines left out: %v",
		logins, took.Round(time.Millisecond), written, limited)
	if written > 1<<20 {
		t.Fatalf("%d bytes of log and audit for %d refused logins, want at most 1 MiB", written, logins)
	}
	if limited == 0 {
		t.Fatal("no audit record left out: the 10-a-second bound did not apply")
	}
	checkLoginLines(t, out)
}

// checkLoginLines: the refusal lines and the audit lines name the user
// cut and marked, never whole; the audit says how many lines it left out.
func checkLoginLines(t *testing.T, out string) {
	t.Helper()
	cut := strings.Repeat("u", 256) + "…(cut)"
	var audits, refusals, saidDropped int
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 4<<10 {
			t.Fatalf("a line of %d bytes: %.200s…", len(line), line)
		}
		switch {
		case strings.Contains(line, `"msg":"kafka audit"`):
			audits++
			if !strings.Contains(line, `"principal":"`+cut+`"`) || !strings.Contains(line, `"operation":"SaslAuthenticate"`) {
				t.Fatalf("an audit line without the user cut and marked: %.400s", line)
			}
			if strings.Contains(line, `"lines_dropped"`) {
				saidDropped++
			}
		case strings.Contains(line, `"msg":"kafka authentication refused"`):
			refusals++
			if !strings.Contains(line, `"user":"`+cut+`"`) {
				t.Fatalf("a refusal line without the user cut and marked: %.400s", line)
			}
		}
	}
	if audits == 0 || refusals == 0 || saidDropped == 0 {
		t.Fatalf("%d audit lines (%d saying lines_dropped), %d refusal lines: want some of each", audits, saidDropped, refusals)
	}
}

// Issue 33.4, on the built binary: from one address, 12 wrong keys sent
// at once are answered SASL_AUTHENTICATION_FAILED, the 5 free ones at
// once and the others later and later (100 ms doubling, capped at 3 s):
// 9.1 s of answers in all, the last after 3 s; meanwhile the right key
// from the same address is answered at once, and its success does not
// clear the address: the next wrong key waits the cap again.
func TestGuessedKeysAnsweredLater(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; waits for delayed refusals")
	}
	gw, boot, admin := loginGateway(t, false)
	addr := fmt.Sprintf("127.0.0.1:%d", boot)
	key, err := os.ReadFile("../../configs/quickstart/acme-orders-producer.key")
	if err != nil {
		t.Fatal(err)
	}
	const from, guesses = "127.0.0.9", 12
	type answer struct {
		code int16
		took time.Duration
		err  error
	}
	answers := make(chan answer, guesses)
	for i := range guesses {
		go func() {
			code, took, err := plainLogin(addr, from, "acme-orders-producer", fmt.Sprintf("guess-%d", i))
			answers <- answer{code, took, err}
		}()
	}
	var got []answer
	for len(got) < 5 { // the free ones: every guess has been judged
		got = append(got, <-answers)
	}
	code, took, err := plainLogin(addr, from, "acme-orders-producer", strings.TrimSpace(string(key)))
	if err != nil || code != 0 {
		t.Fatalf("the right key from the guessing address: code %d, %v", code, err)
	}
	if took > time.Second {
		t.Fatalf("the right key from the guessing address answered after %v: a good client is never delayed", took)
	}
	for len(got) < guesses {
		got = append(got, <-answers)
	}
	var sum, last time.Duration
	for _, a := range got {
		if a.err != nil || a.code != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("a wrong key: code %d, %v; want SASL_AUTHENTICATION_FAILED", a.code, a.err)
		}
		sum += a.took
		last = max(last, a.took)
	}
	// 5 free, then 0.1 + 0.2 + 0.4 + 0.8 + 1.6 + 3 + 3 s.
	if want := 9100 * time.Millisecond; sum < want || last < 3*time.Second || last > 9*time.Second {
		t.Fatalf("%d wrong keys at once: answers took %v in all, the last %v; want at least %v, the last between 3 s and auth_timeout", guesses, sum, last, want)
	}
	code, after, err := plainLogin(addr, from, "acme-orders-producer", "one-more-guess")
	if err != nil || code != kerr.SaslAuthenticationFailed.Code || after < 3*time.Second {
		t.Fatalf("a wrong key after the right one: code %d after %v, %v; want SASL_AUTHENTICATION_FAILED after the cap (3 s)", code, after, err)
	}
	text := metricsText(t, admin)
	if n := sumWhere(text, "flexway_kafka_requests_total", `api="SaslAuthenticate"`, `decision="refused"`); n != guesses+1 {
		t.Fatalf("%v refusals counted, want %d", n, guesses+1)
	}
	if !strings.Contains(gw.stderr.String(), `"answer_delay":"3s"`) {
		t.Fatal("no refusal line says its answer was delayed (answer_delay)")
	}
	t.Logf("%d wrong keys at once from one address: %v of answers in all, the last after %v; the right key meanwhile in %v; one more wrong key after %v",
		guesses, sum.Round(time.Millisecond), last.Round(time.Millisecond), took.Round(10*time.Microsecond), after.Round(time.Millisecond))
}
