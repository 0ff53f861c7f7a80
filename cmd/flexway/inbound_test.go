package main

// Issue 33.1, B2, on the built binary: requests being read are counted in
// the in-flight budgets. One principal's 24 connections each announce a
// large request and send most of it: the gateway's RSS grows by no more
// than the tenant's share and a fixed margin, another tenant produces and
// consumes meanwhile, and RSS is back within 10 s of the connections
// closing.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// The plain configuration.
const inboundBounds = "  kafka:\n    max_connections_per_ip: 0\n    max_in_flight_bytes: 8MiB\n" +
	"    max_tenant_in_flight_bytes: 32MiB\n    max_total_in_flight_bytes: 256MiB\n    max_request_bytes: 16MiB\n"

const (
	inboundShareKiB  = 32 << 10 // max_tenant_in_flight_bytes
	inboundMarginKiB = 16 << 10 // one read per connection, the canary's clients, the collector's slack
)

// rawKafka is a connection that speaks Kafka frames by hand.
type rawKafka struct {
	c    net.Conn
	corr int32
}

func (r *rawKafka) send(req kmsg.Request) error {
	r.corr++
	b := []byte{0, 0, 0, 0}
	b = codec.AppendRequestHeader(b, req.Key(), req.GetVersion(), r.corr, []byte("raw"), false, req.IsFlexible())
	b = req.AppendTo(b)
	codec.PutSize(b, len(b)-4)
	_ = r.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := r.c.Write(b)
	return err
}

func (r *rawKafka) recv(resp kmsg.Response) error {
	_ = r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var sz [4]byte
	if _, err := io.ReadFull(r.c, sz[:]); err != nil {
		return err
	}
	b := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(r.c, b); err != nil {
		return err
	}
	_, body, err := codec.ParseResponseHeader(b, resp.Key(), resp.GetVersion())
	if err != nil {
		return err
	}
	return resp.ReadFrom(body)
}

// dialPlainAuth connects to addr and authenticates with SASL PLAIN.
func dialPlainAuth(t *testing.T, addr, user, pass string) *rawKafka {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	r := &rawKafka{c: c}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	hsr := kmsg.NewPtrSASLHandshakeResponse()
	hsr.Version = 1
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version, au.SASLAuthBytes = 1, []byte("\x00"+user+"\x00"+pass)
	aur := kmsg.NewPtrSASLAuthenticateResponse()
	aur.Version = 1
	for _, step := range []error{r.send(hs), r.recv(hsr), r.send(au), r.recv(aur)} {
		if step != nil {
			t.Fatal(step)
		}
	}
	if hsr.ErrorCode != 0 || aur.ErrorCode != 0 {
		t.Fatalf("authentication: %d %d", hsr.ErrorCode, aur.ErrorCode)
	}
	return r
}

// partialFrame is the head of a Metadata request announcing size bytes of
// frame, followed by filler up to sent bytes in all.
func partialFrame(size, sent int) []byte {
	b := []byte{0, 0, 0, 0}
	b = codec.AppendRequestHeader(b, 3, 4, 1, []byte("partial"), false, false)
	codec.PutSize(b, size)
	return append(b, bytes.Repeat([]byte{0xff}, sent-len(b))...)
}

func TestPartialFramesBoundedOnBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and holds 24 partial frames")
	}
	bin := buildFlexway(t)
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "acme.orders", "globex.orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	dir, base, _ := quickstartOn(t, k, "")
	replaceIn(t, filepath.Join(dir, "flexway.yaml"), "  kafka:\n", inboundBounds)
	gw := startFlexway(t, bin, dir)
	gw.waitHealthz(base + 4)
	pid := gw.cmd.Process.Pid
	boot := fmt.Sprintf("127.0.0.1:%d", base)
	acme, globex := quickstartKey(t, "acme-app"), quickstartKey(t, "globex-app")
	canary(t, boot, globex) // the canary's clients and the first session's series, before idle is read
	time.Sleep(3 * time.Second)
	idle := procKiB(t, pid, "VmRSS")

	for _, c := range []struct {
		name       string
		size, sent int
		refused    bool
	}{
		{"16 MiB requests, 15 MiB sent: over the connection's 8 MiB, refused", 16 << 20, 15 << 20, true},
		{"7 MiB requests, 6 MiB sent: four fit the tenant's 32 MiB", 7 << 20, 6 << 20, false},
	} {
		rs := make([]*rawKafka, 24)
		for i := range rs {
			rs[i] = dialPlainAuth(t, boot, "acme-app", acme)
		}
		frame := partialFrame(c.size, c.sent)
		var wg sync.WaitGroup
		for _, r := range rs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = r.c.SetWriteDeadline(time.Now().Add(60 * time.Second))
				_, _ = r.c.Write(frame)
			}()
		}
		if c.refused {
			for _, r := range rs {
				_ = r.c.SetReadDeadline(time.Now().Add(20 * time.Second))
				if _, err := io.Copy(io.Discard, r.c); err != nil && !strings.Contains(err.Error(), "reset") {
					t.Fatalf("%s: a connection still open: %v", c.name, err)
				}
			}
			gw.waitLog("request larger than max_in_flight_bytes", 5*time.Second)
		} else {
			deadline := time.Now().Add(30 * time.Second)
			for scrapeSum(t, base+4, "flexway_engine_read_budget_pauses_total") < 1 {
				if time.Now().After(deadline) {
					t.Fatalf("%s: no read paused for the budgets within 30 s", c.name)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		canary(t, boot, globex)
		grown := procKiB(t, pid, "VmHWM") - idle
		t.Logf("%s: RSS idle %d MiB, peak +%d MiB", c.name, idle>>10, grown>>10)
		if grown > inboundShareKiB+inboundMarginKiB {
			t.Errorf("%s: peak RSS grew by %d MiB, over the tenant's share %d MiB plus %d MiB", c.name, grown>>10, inboundShareKiB>>10, inboundMarginKiB>>10)
		}
		for _, r := range rs {
			_ = r.c.Close()
		}
		wg.Wait()
		rssBackWithin(t, pid, idle, 10*time.Second, c.name)
	}
	gw.stop()
}

// canary produces a record as globex and reads it back, within 20 s.
func canary(t *testing.T, boot, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	val := []byte("canary " + time.Now().String())
	opts := []kgo.Opt{kgo.SeedBrokers(boot), kgo.SASL(plain.Auth{User: "globex-app", Pass: key}.AsMechanism())}
	prod, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic("orders"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: val}).FirstErr(); err != nil {
		t.Fatalf("globex's produce: %v", err)
	}
	cons, err := kgo.NewClient(append(opts, kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("globex's record not read back within 20 s")
		}
		found := false
		fs.EachRecord(func(r *kgo.Record) { found = found || bytes.Equal(r.Value, val) })
		if found {
			return
		}
	}
}

// rssBackWithin waits until the RSS of pid is within 8 MiB of idle, and
// fails past within.
func rssBackWithin(t *testing.T, pid, idle int, within time.Duration, name string) {
	t.Helper()
	closed := time.Now()
	var now int
	for {
		now = procKiB(t, pid, "VmRSS")
		if now <= idle+8<<10 || time.Since(closed) > within {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if now > idle+8<<10 {
		t.Errorf("%s: RSS %d MiB %v after the connections closed, idle %d MiB", name, now>>10, within, idle>>10)
	}
	t.Logf("%s: RSS %d MiB %.1f s after the connections closed", name, now>>10, time.Since(closed).Seconds())
}
