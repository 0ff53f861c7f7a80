package testkit

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
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
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found: run scripts/install-deps.sh (%v)", err)
	}
	r := &Redis{t: t, dir: t.TempDir(), persist: persist}
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
	cmd := exec.Command("redis-server", append([]string{"--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1",
		"--save", "", "--dir", r.dir, "--daemonize", "no",
		"--protected-mode", "no", "--loglevel", "warning"}, aof...)...)
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
		if ping(r.Addr()) {
			r.cmd, r.exit = cmd, exit
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	<-exit
	return fmt.Errorf("no answer on %s within 10 s", r.Addr())
}

// Do sends one command (inline form) and returns its first reply line.
func (r *Redis) Do(args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", r.Addr(), time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(strings.Join(args, " ") + "\r\n")); err != nil {
		return "", err
	}
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "$") && line != "$-1" { // a bulk string: its value
		v, err := br.ReadString('\n')
		return strings.TrimRight(v, "\r\n"), err
	}
	return line, nil
}

func ping(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}
