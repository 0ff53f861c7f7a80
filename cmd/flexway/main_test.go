package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
)

// P1: under systemd (Type=notify) the service says READY=1 once it
// listens, RELOADING=1 then READY=1 around a SIGHUP reload (S1), and
// STOPPING=1 when it drains on SIGTERM, WATCHDOG=1 while its loops
// answer (WATCHDOG_USEC); the quickstart serves as is.
func TestSystemdNotifyAndReload(t *testing.T) {
	dir := quickstartFiles(t)
	base := testkit.FreePorts(t, 5)
	cfg, _ := os.ReadFile("../../configs/quickstart/flexway.yaml")
	c := strings.NewReplacer("from: 19092, to: 19095", fmt.Sprintf("from: %d, to: %d", base, base+3),
		"127.0.0.1:9464", fmt.Sprintf("127.0.0.1:%d", base+4)).Replace(string(cfg))
	path := filepath.Join(dir, "flexway.yaml")
	os.WriteFile(path, []byte(c), 0o600)

	sock := filepath.Join(dir, "notify.sock")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	states := make(chan string, 16)
	go func() {
		buf := make([]byte, 256)
		for {
			n, _, err := ln.ReadFromUnix(buf)
			if err != nil {
				return
			}
			states <- string(buf[:n])
		}
	}()
	// The watchdog's pings (WatchdogSec=2s: one a second while every loop
	// answers its tick, engine.Engine.Watchdog) are counted apart.
	t.Setenv("WATCHDOG_USEC", "2000000")
	pings := 0
	want := func(s string) {
		t.Helper()
		deadline := time.After(15 * time.Second)
		for {
			select {
			case got := <-states:
				if got == "WATCHDOG=1" && s != got {
					pings++
					continue
				}
				if !strings.Contains(got, s) {
					t.Fatalf("systemd was told %q, want %q", got, s)
				}
				return
			case <-deadline:
				t.Fatalf("systemd was never told %q", s)
			}
		}
	}
	// run writes its banner and log from its own goroutines while the test
	// reads them: buffers under a lock (syncBuffer, examples_test.go).
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- run([]string{"-config", path}, &out, &errb) }()
	want("READY=1")
	if !strings.Contains(out.String(), "kcat -P") {
		t.Fatalf("the banner shows no kcat command:\n%s", out.String())
	}
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	want("RELOADING=1")
	want("READY=1")
	if pings == 0 {
		want("WATCHDOG=1")
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	want("STOPPING=1")
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("did not stop")
	}
	if !strings.Contains(errb.String(), "configuration reloaded") {
		t.Fatalf("no reload in the log:\n%s", errb.String())
	}
}
