// Command density measures what idle authenticated connections cost the
// gateway (issue 4, item 4). Against a running gateway whose pid and admin
// endpoint it is given, it:
//
//  1. reads the gateway's VmRSS, its open descriptors and its Go memory
//     statistics (/metrics) with no client connected;
//  2. opens -n connections on raw TCP, each doing SaslHandshake (PLAIN),
//     SaslAuthenticate, and one Metadata request for -topic (which makes the
//     gateway dial that connection's own broker connection: a connection
//     *pair*), then stays idle; -metadata=false leaves them unpaired;
//  3. waits -settle, reads the same figures again: (after - before) / n is
//     the cost of one pair; then reads the gateway's CPU time and context
//     switches over -idle with every pair open and idle (the ticker at
//     rest, engine/session/rest.go);
//  4. runs one franz-go producer through the gateway (-records of -size
//     bytes) while the n connections stay open, and reads the gateway's GC
//     pauses over that window (go_gc_pauses_seconds, a cumulative
//     histogram: the difference of two scrapes);
//  5. closes the n connections and runs the same producer again (the
//     throughput with nothing else open, on the same gateway).
//
// It prints key=value lines starting with "DENSITY " for bench/run to read,
// and a human summary on stderr.
//
//	density -addr 127.0.0.1:29092 -user bench-acme -pass KEY -pid 1234 \
//	        -metrics http://127.0.0.1:29464/metrics -n 9000
//
// The client holds n descriptors, the gateway 2n: with a hard limit of
// 20,000 open files per process, n tops out a little under 10,000.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/flexway/flexway/bench/procstat"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:29092", "the gateway's bootstrap address")
	user := flag.String("user", "", "SASL PLAIN user (the API key's id)")
	pass := flag.String("pass", "", "SASL PLAIN password (or env DENSITY_PASS)")
	pid := flag.Int("pid", 0, "the gateway's pid (for /proc)")
	metricsURL := flag.String("metrics", "", "the gateway's /metrics URL")
	n := flag.Int("n", 1000, "idle connections to open")
	topic := flag.String("topic", "perf", "the topic the Metadata request and the producer name")
	metadata := flag.Bool("metadata", true, "send one Metadata request on each connection (dials its broker connection)")
	workers := flag.Int("workers", 32, "connections opened in parallel (below max_unauthenticated_connections)")
	settle := flag.Duration("settle", 5*time.Second, "wait before reading the figures after opening")
	idleFor := flag.Duration("idle", 5*time.Second, "how long the gateway's CPU is read with the pairs open and idle (0: not read)")
	records := flag.Int("records", 200000, "records of the active producer (0: no producer)")
	size := flag.Int("size", 1024, "record size of the active producer")
	flag.Parse()
	if *pass == "" {
		*pass = os.Getenv("DENSITY_PASS")
	}
	if *pid == 0 {
		fail("-pid is required")
	}
	raiseNoFile()

	out := func(k string, v any) { fmt.Printf("DENSITY %s=%v\n", k, v) }
	say := func(f string, a ...any) { fmt.Fprintf(os.Stderr, "density: "+f+"\n", a...) }

	before := sample(*pid, *metricsURL)
	say("before: VmRSS %.1f MiB, %d fds, heap in use %.1f MiB", mib(before.rss), before.fds, mib(before.m["go_memstats_heap_inuse_bytes"]))

	t0 := time.Now()
	conns, err := openAll(*addr, *user, *pass, *topic, *n, *workers, *metadata)
	opened := len(conns)
	say("opened %d of %d connections in %.1f s", opened, *n, time.Since(t0).Seconds())
	out("requested", *n)
	out("opened", opened)
	out("open_seconds", fmt.Sprintf("%.2f", time.Since(t0).Seconds()))
	if err != nil {
		out("open_error", strconv.Quote(err.Error()))
		say("stopped opening: %v", err)
	}
	time.Sleep(*settle)
	// Any connection the gateway closed meanwhile shows as readable (EOF).
	alive := countAlive(conns)
	after := sample(*pid, *metricsURL)
	out("alive_after_settle", alive)
	out("rss_before_kib", before.rss/1024)
	out("rss_after_kib", after.rss/1024)
	out("fds_before", before.fds)
	out("fds_after", after.fds)
	out("upstream_conns", (after.fds-before.fds)-opened) // each pair: one client fd + one broker fd
	if opened > 0 {
		per := func(k string) float64 { return (after.m[k] - before.m[k]) / float64(opened) }
		rssPer := float64(after.rss-before.rss) / float64(opened)
		heapPer := per("go_memstats_heap_inuse_bytes")
		stackPer := per("go_memstats_stack_inuse_bytes")
		out("rss_per_conn_bytes", fmt.Sprintf("%.0f", rssPer))
		out("heap_inuse_per_conn_bytes", fmt.Sprintf("%.0f", heapPer))
		out("stack_inuse_per_conn_bytes", fmt.Sprintf("%.0f", stackPer))
		out("goroutines_before", before.m["go_goroutines"])
		out("goroutines_after", after.m["go_goroutines"])
		say("after: VmRSS %.1f MiB (+%.0f B per connection), heap in use +%.0f B, stacks +%.0f B per connection, %d fds (+%d), goroutines %v -> %v",
			mib(after.rss), rssPer, heapPer, stackPer, after.fds, after.fds-before.fds, before.m["go_goroutines"], after.m["go_goroutines"])
	}

	if *idleFor > 0 {
		// The gateway's own work with every pair idle: its threads' run
		// time and the times they were scheduled in over the window.
		cpu0, in0 := procstat.Sched(*pid, 0), procstat.Sched(*pid, 2)
		time.Sleep(*idleFor)
		secs := idleFor.Seconds()
		ms := (procstat.Sched(*pid, 0) - cpu0) / 1e6 / secs
		sw := (procstat.Sched(*pid, 2) - in0) / secs
		out("idle_cpu_ms_per_s", fmt.Sprintf("%.2f", ms))
		out("idle_switches_per_s", fmt.Sprintf("%.0f", sw))
		say("idle for %v with %d pairs open: %.2f ms of CPU and %.0f context switches a second", *idleFor, opened, ms, sw)
	}

	if *records > 0 {
		g0 := sample(*pid, *metricsURL)
		res, err := produce(*addr, *user, *pass, *topic, *records, *size)
		g1 := sample(*pid, *metricsURL)
		if err != nil {
			out("producer_error", strconv.Quote(err.Error()))
			say("producer with %d open: %v", opened, err)
		} else {
			out("producer_mib_s_loaded", fmt.Sprintf("%.2f", res.mibps))
			out("producer_p99_ms_loaded", fmt.Sprintf("%.2f", res.p99))
			say("producer with %d idle connections open: %.1f MiB/s, p99 %.1f ms", opened, res.mibps, res.p99)
		}
		gc := gcWindow(g0, g1)
		out("gc_count_loaded", gc.count)
		out("gc_pause_mean_us_loaded", fmt.Sprintf("%.1f", gc.mean*1e6))
		out("gc_pause_max_us_loaded", fmt.Sprintf("%.1f", gc.max*1e6))
		out("gc_cpu_s_loaded", fmt.Sprintf("%.3f", gc.cpu))
		say("GC during that run: %d cycles, mean pause %.0f µs, max pause <= %.0f µs, GC CPU %.3f s", gc.count, gc.mean*1e6, gc.max*1e6, gc.cpu)
		out("gc_pause_summary_max_us", fmt.Sprintf("%.1f", g1.m[`go_gc_duration_seconds{quantile="1"}`]*1e6))
		out("gc_pause_summary_p50_us", fmt.Sprintf("%.1f", g1.m[`go_gc_duration_seconds{quantile="0.5"}`]*1e6))
	}

	for _, c := range conns {
		c.Close()
	}
	if *records > 0 {
		time.Sleep(2 * time.Second)
		g0 := sample(*pid, *metricsURL)
		res, err := produce(*addr, *user, *pass, *topic, *records, *size)
		g1 := sample(*pid, *metricsURL)
		if err != nil {
			out("producer_error_idle", strconv.Quote(err.Error()))
		} else {
			out("producer_mib_s_alone", fmt.Sprintf("%.2f", res.mibps))
			out("producer_p99_ms_alone", fmt.Sprintf("%.2f", res.p99))
			say("producer alone: %.1f MiB/s, p99 %.1f ms", res.mibps, res.p99)
		}
		gc := gcWindow(g0, g1)
		out("gc_count_alone", gc.count)
		out("gc_pause_mean_us_alone", fmt.Sprintf("%.1f", gc.mean*1e6))
		out("gc_pause_max_us_alone", fmt.Sprintf("%.1f", gc.max*1e6))
	}
}

func fail(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "density: "+f+"\n", a...)
	os.Exit(1)
}

func mib(v float64) float64 { return v / (1 << 20) }

func raiseNoFile() {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) == nil && r.Cur < r.Max {
		r.Cur = r.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r)
	}
}

// ---- the gateway's figures ----

type figures struct {
	rss float64 // bytes
	fds int
	m   map[string]float64 // /metrics, by series (name with labels)
}

func sample(pid int, url string) figures {
	f := figures{m: map[string]float64{}}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				f.rss = kb * 1024
			}
		}
	} else {
		fail("gateway pid %d: %v", pid, err)
	}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		f.fds = len(ents)
	}
	if url == "" {
		return f
	}
	resp, err := http.Get(url)
	if err != nil {
		fmt.Fprintf(os.Stderr, "density: %s: %v\n", url, err)
		return f
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			f.m[line[:i]] = v
		}
	}
	return f
}

type gcStats struct {
	count     int
	mean, max float64 // seconds
	cpu       float64
}

// gcWindow reads the GC cycles between two scrapes: their count and mean
// pause from go_gc_duration_seconds_{count,sum}, the longest pause as the
// upper bound of the highest bucket of go_gc_pauses_seconds that grew.
// (go_gc_pauses_seconds counts stop-the-world pauses, two per cycle.)
func gcWindow(a, b figures) gcStats {
	var s gcStats
	s.count = int(b.m["go_gc_duration_seconds_count"] - a.m["go_gc_duration_seconds_count"])
	if s.count > 0 {
		s.mean = (b.m["go_gc_duration_seconds_sum"] - a.m["go_gc_duration_seconds_sum"]) / float64(s.count)
	}
	s.cpu = b.m["go_gc_cpu_seconds_total"] - a.m["go_gc_cpu_seconds_total"]
	type bucket struct{ le, n float64 }
	var bs []bucket
	for k, v := range b.m {
		if le, ok := strings.CutPrefix(k, `go_gc_pauses_seconds_bucket{le="`); ok {
			le = strings.TrimSuffix(le, `"}`)
			x, err := strconv.ParseFloat(le, 64)
			if le == "+Inf" {
				x, err = math.Inf(1), nil
			}
			if err == nil {
				bs = append(bs, bucket{x, v - a.m[k]})
			}
		}
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	prev := 0.0
	for _, x := range bs { // cumulative: the highest bucket whose count grew past the one below
		if x.n > prev {
			s.max = x.le
		}
		prev = x.n
	}
	return s
}

// ---- idle connections on raw TCP ----

type conn struct {
	c    net.Conn
	corr int32
	buf  []byte
}

func (c *conn) Close() { c.c.Close() }

// roundTrip writes one request (header v1, or v2 when flexible) and reads
// its answer into resp.
func (c *conn) roundTrip(req kmsg.Request, resp kmsg.Response) error {
	c.corr++
	b := c.buf[:0]
	b = append(b, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(c.corr))
	id := "flexway-density"
	b = binary.BigEndian.AppendUint16(b, uint16(len(id)))
	b = append(b, id...)
	if req.IsFlexible() {
		b = append(b, 0) // no tagged fields
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	c.buf = b
	_ = c.c.SetDeadline(time.Now().Add(15 * time.Second))
	defer c.c.SetDeadline(time.Time{})
	if _, err := c.c.Write(b); err != nil {
		return err
	}
	var sz [4]byte
	if _, err := io.ReadFull(c.c, sz[:]); err != nil {
		return err
	}
	body := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(c.c, body); err != nil {
		return err
	}
	if len(body) < 4 || int32(binary.BigEndian.Uint32(body)) != c.corr {
		return errors.New("answer with another correlation id")
	}
	body = body[4:]
	if req.IsFlexible() && req.Key() != 18 { // response header v1: tagged fields
		ntags, k := binary.Uvarint(body)
		if k <= 0 {
			return errors.New("bad response header")
		}
		body = body[k:]
		for i := uint64(0); i < ntags; i++ {
			_, k1 := binary.Uvarint(body)
			if k1 <= 0 {
				return errors.New("bad tag")
			}
			l, k2 := binary.Uvarint(body[k1:])
			if k2 <= 0 || uint64(len(body)) < uint64(k1+k2)+l {
				return errors.New("bad tag")
			}
			body = body[uint64(k1+k2)+l:]
		}
	}
	resp.SetVersion(req.GetVersion())
	return resp.ReadFrom(body)
}

func dial(addr, user, pass, topic string, metadata bool) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	c := &conn{c: nc, buf: make([]byte, 0, 256)}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = "PLAIN"
	var hsr kmsg.SASLHandshakeResponse
	if err := c.roundTrip(hs, &hsr); err != nil {
		nc.Close()
		return nil, fmt.Errorf("SaslHandshake: %w", err)
	}
	if hsr.ErrorCode != 0 {
		nc.Close()
		return nil, fmt.Errorf("SaslHandshake: error code %d", hsr.ErrorCode)
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version = 1
	au.SASLAuthBytes = []byte("\x00" + user + "\x00" + pass)
	var aur kmsg.SASLAuthenticateResponse
	if err := c.roundTrip(au, &aur); err != nil {
		nc.Close()
		return nil, fmt.Errorf("SaslAuthenticate: %w", err)
	}
	if aur.ErrorCode != 0 {
		nc.Close()
		return nil, fmt.Errorf("SaslAuthenticate: error code %d", aur.ErrorCode)
	}
	if metadata {
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 9
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(topic)
		md.Topics = append(md.Topics, t)
		var mr kmsg.MetadataResponse
		if err := c.roundTrip(md, &mr); err != nil {
			nc.Close()
			return nil, fmt.Errorf("Metadata: %w", err)
		}
		if len(mr.Topics) != 1 || mr.Topics[0].ErrorCode != 0 {
			nc.Close()
			return nil, fmt.Errorf("Metadata: topic %s not answered (%d topics)", topic, len(mr.Topics))
		}
	}
	c.buf = nil // idle: keep nothing
	return c, nil
}

// openAll opens n connections with `workers` in parallel; it stops at the
// first error and returns what it opened with that error.
func openAll(addr, user, pass, topic string, n, workers int, metadata bool) ([]*conn, error) {
	var (
		mu    sync.Mutex
		conns = make([]*conn, 0, n)
		next  atomic.Int64
		first error
		stop  atomic.Bool
		wg    sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && next.Add(1) <= int64(n) {
				c, err := dial(addr, user, pass, topic, metadata)
				mu.Lock()
				if err != nil {
					if first == nil {
						first = fmt.Errorf("connection %d: %w", len(conns)+1, err)
					}
					stop.Store(true)
				} else {
					conns = append(conns, c)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return conns, first
}

// countAlive counts the connections the gateway has not closed: a read
// with an immediate deadline times out on a live idle connection.
func countAlive(conns []*conn) int {
	alive := 0
	var one [1]byte
	for _, c := range conns {
		_ = c.c.SetReadDeadline(time.Now().Add(time.Millisecond))
		_, err := c.c.Read(one[:])
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			alive++
		}
		_ = c.c.SetReadDeadline(time.Time{})
	}
	return alive
}

// ---- the active producer ----

type prodResult struct{ mibps, p99 float64 }

func produce(addr, user, pass, topic string, n, size int) (prodResult, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()),
		kgo.ClientID("flexway-density-producer"),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(1<<16),
	)
	if err != nil {
		return prodResult{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		return prodResult{}, err
	}
	pool := make([]byte, 4<<20+size)
	rand.Read(pool)
	lat := make([]int64, n)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	wg.Add(n)
	t0 := time.Now()
	for i := 0; i < n; i++ {
		off := (i * 4093) % (len(pool) - size)
		start, idx := time.Now(), i
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: pool[off : off+size]}, func(_ *kgo.Record, err error) {
			lat[idx] = time.Since(start).Microseconds()
			if err != nil {
				once.Do(func() { first = err })
			}
			wg.Done()
		})
	}
	wg.Wait()
	el := time.Since(t0)
	if first != nil {
		return prodResult{}, first
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return prodResult{
		mibps: float64(n) * float64(size) / (1 << 20) / el.Seconds(),
		p99:   float64(lat[min(n*99/100, n-1)]) / 1000,
	}, nil
}
