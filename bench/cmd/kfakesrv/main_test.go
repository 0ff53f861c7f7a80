package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// build builds kfakesrv into a temporary folder.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kfakesrv")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// start runs the built kfakesrv on a free port with args and env, and
// returns the address it prints.
func start(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-port", "0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := regexp.MustCompile(`listening on \[(\S+)\]`).FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("kfakesrv printed no address")
	}
	return ""
}

// topics lists the topics a client (opts) sees at addr, or the error.
func topics(addr string, opts ...kgo.Opt) ([]string, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	names := td.Names()
	slices.Sort(names)
	return names, nil
}

// bench/run's broker with BENCH_BROKER=kfake: the four topics of the
// harness, 3 partitions each as asked; with -sasl-user only a client
// authenticating as that user with the password of the environment gets
// in; -sasl-user without a password stops it.
func TestKfakesrvTopicsAndSASL(t *testing.T) {
	bin := build(t)
	addr := start(t, bin, nil, "-partitions", "3")
	names, err := topics(addr)
	if err != nil || !slices.Equal(names, []string{"acme.big", "acme.perf", "big", "perf"}) {
		t.Fatalf("topics %v, err %v; want acme.big, acme.perf, big, perf", names, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	td, err := kadm.NewClient(cl).ListTopics(context.Background(), "big")
	cl.Close()
	if err != nil || len(td["big"].Partitions) != 3 {
		t.Fatalf("big: %d partitions, err %v; want 3", len(td["big"].Partitions), err)
	}

	saddr := start(t, bin, []string{"KFAKESRV_SASL_PASSWORD=s3cret"}, "-sasl-user", "flexway")
	if names, err := topics(saddr, kgo.SASL(plain.Auth{User: "flexway", Pass: "s3cret"}.AsMechanism())); err != nil || len(names) != 4 {
		t.Fatalf("with the user: topics %v, err %v", names, err)
	}
	if _, err := topics(saddr, kgo.SASL(plain.Auth{User: "flexway", Pass: "wrong"}.AsMechanism())); err == nil {
		t.Fatal("a wrong password got in")
	}
	if _, err := topics(saddr); err == nil {
		t.Fatal("a client without SASL got in")
	}

	// -version: the kfake module of the build (the harness's table names it).
	if v, err := exec.Command(bin, "-version").Output(); err != nil || !regexp.MustCompile(`^v\d+\.\d+\.\d+\S*\n$`).Match(v) {
		t.Fatalf("-version: %q, err %v", v, err)
	}

	out, err := exec.Command(bin, "-port", "0", "-sasl-user", "flexway").CombinedOutput()
	if code := exitCode(err); code != 2 || !strings.Contains(string(out), "KFAKESRV_SASL_PASSWORD") {
		t.Fatalf("-sasl-user without a password: exit %d, output %q; want 2 and the variable named", code, out)
	}
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
