package engine

// Invariant 8 for the tasks posted to a loop from other goroutines (issue
// 33.5): a quota's unmute timer, a dial's end, a worker's verdict. Each
// reaches its loop through one guarded entry (session.Loop.RunFor,
// engine/conn's Loop.run): a panic there closes the one connection the
// task served, is logged with its stack and counted; the engine serves on.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flexway/flexway/engine/session"
	"github.com/twmb/franz-go/pkg/kgo"
)

// panicInTask makes the next task named where that serves cl panic; it
// reports whether it fired.
func panicInTask(env *testEnv, where string, cl *session.Client) *atomic.Bool {
	var fired atomic.Bool
	hook := func(_ *session.Loop, w string, x any) {
		if w == where && x == any(cl) && fired.CompareAndSwap(false, true) {
			panic("injected by the test in " + where)
		}
	}
	env.e.env.Hooks.Task.Store(&hook)
	env.t.Cleanup(func() { env.e.env.Hooks.Task.Store(nil) })
	return &fired
}

// closedWithin waits for the gateway to end r's connection (EOF or reset).
func closedWithin(t *testing.T, r *rawConn, d time.Duration) {
	t.Helper()
	_ = r.c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, r.c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection whose task panicked is still open after %v", d)
	}
}

// servesOn checks that another tenant's client still produces and
// consumes through the gateway.
func servesOn(t *testing.T, env *testEnv, tag string) {
	t.Helper()
	prod := env.client("globex-app")
	produceN(t, prod, "orders", 2, tag)
	cons := env.client("globex-app", kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	seen := 0
	for seen < 2 && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(rec *kgo.Record) {
			if strings.HasPrefix(string(rec.Value), tag+"-") {
				seen++
			}
		})
	}
	if seen < 2 {
		t.Fatalf("another tenant's consumer read %d of the 2 records %q produced after the panic", seen, tag)
	}
}

// A panic in the quota's unmute task (its timer posts it to the client's
// loop) closes that client only.
func TestPanicInUnmuteTaskClosesOneConnection(t *testing.T) {
	skipOnRealKafka(t)
	env := newTestEnv(t, "    quotas:\n      client: { producer_byte_rate: 1MiB }\n      window: 1s\n")
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	servedOrders(t, r)
	cl := clientOf(t, env.e, r)
	fired := panicInTask(env, "unmute", cl)
	panics := env.e.env.Signals.Panics()

	r.send(rawProduce(5 << 19)) // 1.5 MiB past the bucket: muted about 1.5 s
	a := produceAnswer()
	r.recv(a)
	if a.ThrottleMillis < 1000 {
		t.Fatalf("throttle_time_ms = %d, want about 1500: no mute, no unmute task", a.ThrottleMillis)
	}
	closedWithin(t, r, 15*time.Second)
	if !fired.Load() {
		t.Fatal("the unmute task never ran")
	}
	env.waitLog(5*time.Second, "internal error", "where=unmute", "injected by the test in unmute", "goroutine")
	if n := env.e.env.Signals.Panics(); n != panics+1 {
		t.Fatalf("flexway_kafka_panics_total moved by %d, want 1", n-panics)
	}
	servesOn(t, env, "after-unmute-panic")
}

// A panic in a dial's failure task (the dial's goroutine posts it to the
// client's loop) closes that client only.
func TestPanicInDialFailureTaskClosesOneConnection(t *testing.T) {
	env := newTestEnv(t, "")
	node := env.nodes()[0]
	up := env.e.env.Upstream("events")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now
	own, _ := up.Addr(node)
	up.Learn(node, "127.0.0.1", int32(gone))

	r := dialRaw(t, fmt.Sprintf("127.0.0.1:%d", env.nodePort(node)), "acme-app", env.keys["acme-app"])
	cl := clientOf(t, env.e, r)
	fired := panicInTask(env, "dial", cl)
	panics := env.e.env.Signals.Panics()
	metadataOrders(r) // needs the unreachable broker: its dial fails
	closedWithin(t, r, 15*time.Second)
	if !fired.Load() {
		t.Fatal("the dial's failure task never ran")
	}
	env.waitLog(5*time.Second, "internal error", "where=dial", "injected by the test in dial", "goroutine")
	if n := env.e.env.Signals.Panics(); n != panics+1 {
		t.Fatalf("flexway_kafka_panics_total moved by %d, want 1", n-panics)
	}

	host, port, _ := net.SplitHostPort(own)
	var p int
	fmt.Sscan(port, &p)
	up.Learn(node, host, int32(p))
	servesOn(t, env, "after-dial-panic")
}

// Every task posted to a loop goes through the one guarded entry: gnet's
// Execute is called only by session.Loop.post and engine/conn's Loop.run.
func TestOneEntryPostsToTheLoops(t *testing.T) {
	allowed := map[string]int{"session/loop.go": 1, "conn/loop.go": 1}
	execute := regexp.MustCompile(`\.Execute\(`)
	found := map[string]int{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := len(execute.FindAll(b, -1)); n > 0 {
			found[filepath.ToSlash(path)] = n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for path, n := range found {
		if allowed[path] != n {
			t.Errorf("%s calls Execute %d times: a task posted to a loop must go through session.Loop.RunFor (or engine/conn's Loop.run), guarded (invariant 8)", path, n)
		}
	}
	for path := range allowed {
		if found[path] == 0 {
			t.Errorf("%s no longer holds the entry: update this test", path)
		}
	}
}
