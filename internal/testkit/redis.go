package testkit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Redis is a real redis-server (Debian's, scripts/install-deps.sh) started
// by a test on a free port below 32768, without persistence unless
// StartRedisPersistent; the test's cleanup stops it.
type Redis struct {
	t       testing.TB
	Port    int
	dir     string
	persist bool
	cmd     *exec.Cmd
	exit    chan struct{}

	pass     string   // requirepass and masterauth: Do and the PING at start AUTH first
	extra    []string // more arguments (replicaof, cluster-enabled: redisha.go)
	sentinel string   // a Sentinel's configuration: the server runs with --sentinel
}

// StartRedis starts a redis-server and waits until it answers PING.
func StartRedis(t testing.TB) *Redis { return startRedis(t, false) }

// StartRedisPersistent starts a redis-server that writes every command to
// its append-only file before answering it (appendfsync always): killed
// with SIGKILL and started again (Restart), it holds every write it
// acknowledged, as an operator's Redis kept for budgets does.
func StartRedisPersistent(t testing.TB) *Redis { return startRedis(t, true) }

func startRedis(t testing.TB, persist bool) *Redis {
	t.Helper()
	return startRedisAs(t, &Redis{persist: persist})
}

// startRedisAs starts r (its pass, extra, sentinel set) on a free port.
func startRedisAs(t testing.TB, r *Redis) *Redis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found: run scripts/install-deps.sh (%v)", err)
	}
	r.t, r.dir = t, t.TempDir()
	t.Cleanup(r.Kill)
	for try := 0; ; try++ {
		r.Port = FreePort(t)
		if err := r.start(); err == nil {
			return r
		} else if try == 2 {
			t.Fatalf("redis-server: %v", err)
		}
	}
}

// Addr is the server's host:port.
func (r *Redis) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.Port) }

// URL is the server's redis:// URL.
func (r *Redis) URL() string { return "redis://" + r.Addr() }

// Kill stops the server at once (SIGKILL) and waits for it to exit.
func (r *Redis) Kill() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill()
	<-r.exit
	r.cmd = nil
}

// Restart starts the server again on the same port: empty, or with what it
// acknowledged before when persistent. After Kill, it starts the server
// killed.
func (r *Redis) Restart() {
	r.t.Helper()
	r.Kill()
	var err error
	for try := 0; try < 50; try++ { // the port may linger a moment
		if err = r.start(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.t.Fatalf("redis-server restart on %d: %v", r.Port, err)
}

func (r *Redis) start() error {
	aof := []string{"--appendonly", "no"}
	if r.persist {
		aof = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	args := append([]string{"--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1",
		"--save", "", "--dir", r.dir, "--daemonize", "no",
		"--protected-mode", "no", "--loglevel", "warning"}, aof...)
	if r.pass != "" {
		args = append(args, "--requirepass", r.pass, "--masterauth", r.pass)
	}
	args = append(args, r.extra...)
	if r.sentinel != "" { // its file first (it rewrites it), no persistence
		conf := filepath.Join(r.dir, "sentinel.conf")
		if err := os.WriteFile(conf, []byte(r.sentinel), 0o600); err != nil {
			return err
		}
		args = []string{conf, "--sentinel", "--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1",
			"--dir", r.dir, "--daemonize", "no", "--protected-mode", "no", "--loglevel", "warning"}
	}
	cmd := exec.Command("redis-server", args...)
	if err := cmd.Start(); err != nil {
		return err
	}
	exit := make(chan struct{})
	go func() { cmd.Wait(); close(exit) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exit:
			return fmt.Errorf("exited at start (port %d taken?)", r.Port)
		default:
		}
		if ping(r.Addr(), r.pass) {
			r.cmd, r.exit = cmd, exit
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	<-exit
	return fmt.Errorf("no answer on %s within 10 s", r.Addr())
}

// Do sends one command (inline form) and returns its reply: a bulk
// string's value, an array's elements a line each, any other reply's line
// as sent ("+OK", ":12", "-ERR ...", "$-1" for none).
func (r *Redis) Do(args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", r.Addr(), time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	br := bufio.NewReader(c)
	if r.pass != "" {
		if _, err := c.Write([]byte("AUTH " + r.pass + "\r\n")); err != nil {
			return "", err
		}
		if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
			return "", fmt.Errorf("AUTH: %q %v", line, err)
		}
	}
	if _, err := c.Write([]byte(strings.Join(args, " ") + "\r\n")); err != nil {
		return "", err
	}
	return readReply(br, 0)
}

// readReply reads one RESP2 reply (Do's forms), arrays nested 4 deep at most.
func readReply(br *bufio.Reader, depth int) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	n, _ := strconv.Atoi(line[min(1, len(line)):])
	switch {
	case strings.HasPrefix(line, "$") && n >= 0:
		b := make([]byte, n+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return "", err
		}
		return string(b[:n]), nil
	case strings.HasPrefix(line, "*") && n > 0 && depth < 4:
		out := make([]string, 0, n)
		for range n {
			v, err := readReply(br, depth+1)
			if err != nil {
				return "", err
			}
			out = append(out, v)
		}
		return strings.Join(out, "\n"), nil
	}
	return line, nil
}

func ping(addr, pass string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	cmd := "PING\r\n"
	if pass != "" {
		cmd = "AUTH " + pass + "\r\n" + cmd
	}
	if _, err := c.Write([]byte(cmd)); err != nil {
		return false
	}
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if pass != "" && err == nil && strings.HasPrefix(line, "+OK") {
		line, err = br.ReadString('\n')
	}
	return err == nil && strings.HasPrefix(line, "+PONG")
}
