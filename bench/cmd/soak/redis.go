// The soak's Redis (server.counters): a redis-server the soak starts itself
// on a free port, writing every command to its append-only file before
// answering it (appendfsync always), so that killed with SIGKILL and
// started again on the same port and folder it holds every write it
// acknowledged, as an operator's Redis kept for budgets does; and the
// tenants' day and month budget counters read from it directly
// (quota/counters' keys: flexway:<policy>:<tenant>:day:<date>, …:month:<month>).
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// budgetPolicy is the soak's quota policy: a day budget never reached.
const budgetPolicy = "plans"

// redisServer is the soak's redis-server process.
type redisServer struct {
	port    int
	dir     string // its data folder: the append-only file
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
}

// startRedis starts a redis-server on a free port below 32768, its log in
// logDir. Its append-only file goes to a folder of its own on /dev/shm (a
// tmpfs) when there is one: a SIGKILL keeps what the process wrote there
// as well, and no disk of a loaded machine stretches an fsync (every
// write's, appendfsync always) past the gateway's 1 s timeout on the
// store; remove removes that folder.
func startRedis(logDir string) (r *redisServer, remove func(), err error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, nil, fmt.Errorf("redis-server not found: run make deps (%v)", err)
	}
	logDir, err = filepath.Abs(logDir) // redis-server changes into its data folder
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, nil, err
	}
	dir, remove := logDir, func() {}
	if shm, err := os.MkdirTemp("/dev/shm", "flexway-soak-redis-"); err == nil {
		dir, remove = shm, func() { _ = os.RemoveAll(shm) }
	}
	redis.SetLogger(quiet{}) // its pool's notices while the server is down: the soak says what happens
	r = &redisServer{dir: dir, logPath: filepath.Join(logDir, "redis.log")}
	for try := 0; try < 3; try++ {
		r.port = freePorts(1)
		if err = r.start(); err == nil {
			return r, remove, nil
		}
	}
	remove()
	return nil, nil, err
}

// quiet is go-redis's logger, silenced.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func (r *redisServer) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

func (r *redisServer) url() string { return "redis://" + r.addr() }

// start starts the process on r.port with r.dir's data and waits until it
// answers PING (10 s at most).
func (r *redisServer) start() error {
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "yes", "--appendfsync", "always", "--dir", r.dir,
		"--daemonize", "no", "--protected-mode", "no", "--loglevel", "warning", "--logfile", r.logPath)
	cmd.SysProcAttr = dieWith(syscall.SIGKILL)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	cl := r.client()
	defer cl.Close()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case <-done:
			return fmt.Errorf("redis-server exited at its start on port %d (log: %s)", r.port, r.logPath)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := cl.Ping(ctx).Err()
		cancel()
		if err == nil {
			r.cmd, r.done = cmd, done
			return nil
		}
	}
	_ = cmd.Process.Kill()
	<-done
	return fmt.Errorf("redis-server: no answer on %s within 10 s", r.addr())
}

// kill ends the process with SIGKILL and waits for its end.
func (r *redisServer) kill() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
	r.cmd = nil
}

// restart starts the process again on the same port and data, after kill
// (the port may linger a moment: tried for 5 s).
func (r *redisServer) restart() error {
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err = r.start(); err == nil {
			return nil
		}
	}
	return err
}

func (r *redisServer) client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1, DialTimeout: time.Second})
}

// budgets are the budget counters Redis holds, by tenant: the sum of the
// tenant's day keys, and of its month keys (a run across a UTC midnight
// spans two of them).
type budgets struct {
	Day, Month map[string]int64
}

// budgets reads every tenant's counters from Redis.
func (r *redisServer) budgets(tenants []string) (budgets, error) {
	b := budgets{Day: map[string]int64{}, Month: map[string]int64{}}
	cl := r.client()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, t := range tenants {
		for window, into := range map[string]map[string]int64{"day": b.Day, "month": b.Month} {
			keys, err := cl.Keys(ctx, "flexway:"+budgetPolicy+":"+t+":"+window+":*").Result()
			if err != nil {
				return b, err
			}
			for _, k := range keys {
				n, err := cl.Get(ctx, k).Int64()
				if err != nil {
					return b, fmt.Errorf("GET %s: %w", k, err)
				}
				into[t] += n
			}
		}
	}
	return b, nil
}

// stableBudgets reads the counters until two reads 200 ms apart agree
// (what a process killed had already sent is taken), 5 s at most.
func (r *redisServer) stableBudgets(tenants []string) (budgets, error) {
	prev, err := r.budgets(tenants)
	for deadline := time.Now().Add(5 * time.Second); err == nil && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		var next budgets
		if next, err = r.budgets(tenants); err == nil && fmt.Sprint(next) == fmt.Sprint(prev) {
			return next, nil
		}
		prev = next
	}
	return prev, err
}

// countLines counts the lines of the files at paths holding s.
func countLines(paths []string, s string) int {
	n := 0
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			n += strings.Count(string(b), s)
		}
	}
	return n
}
