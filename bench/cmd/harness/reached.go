package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Quotas reached (issue 22, items 6 and 7), BENCH_PARTS=quota-reached
// (make bench-quota runs it after the quota part): the same build of
// flexway as two gateways side by side on the one broker, one with the
// seed's quotas (seedQuotas), one without, and
//
//   - per client library and direction, BENCH_REACHED_REPEAT runs each,
//     the gateways in turn within a run: franz-go (harness client,
//     client.go), kafka-producer-perf-test and kafka-consumer-perf-test
//     (the Java client), kcat (librdkafka), confluent-kafka and
//     kafka-python (python3), each with its library's defaults, 1 KiB
//     records of incompressible bytes, flat out; a producer writes
//     BENCH_REACHED_PRODUCE_MIB, a consumer reads BENCH_REACHED_CONSUME_MIB
//     from the start of a topic the harness filled at the broker first.
//     Measured: the rate over seconds 4 to 14 of the run's first byte
//     (producers: the topic's end offsets at the broker, every 100 ms, for
//     every library alike; consumers: the records as the client hands
//     them over), the bytes of the first second, the p99 of a request's
//     latency while held (franz-go: kgo.HookBrokerE2E, each Produce or
//     Fetch from its write to its answer read; confluent-kafka:
//     librdkafka's rtt p99 of each 1 s statistics window, the highest;
//     kafka-producer-perf-test: its p99 of a record, the whole run, the
//     time in its buffer included; the others print none), and the
//     gateway's CPU s/GiB (its threads' schedstat) against the same client
//     through the gateway without quotas in the same run;
//   - a noisy neighbour (item 7): tenant globex produces at a fixed
//     BENCH_NEIGHBOUR_RATE (franz-go) for BENCH_NEIGHBOUR_SECONDS; from
//     second neighbourAStart, tenant acme produces and consumes flat out
//     with three keys. globex's throughput and p99 alone and beside acme,
//     in three passes: through the gateway with the seed's quotas (acme
//     held), through the one without (BENCH_NEIGHBOUR_CONTRAST: acme
//     unheld), and the floor (BENCH_NEIGHBOUR_FLOOR): the same without the
//     gateway, every client direct to the broker's PLAINTEXT listener and
//     acme's paced at the rates the quotas hold it to
//     (BENCH_NEIGHBOUR_FLOOR_PRODUCE_MIB_S in all, ..._CONSUME_MIB_S each),
//     what the same load costs globex at the broker and on the machine
//     with no gateway in the path.
//
// BENCH_REACHED_LIBS=none leaves out the libraries: the neighbour alone.
//
// quota-reached.md (the tables) and quota-reached-runs.tsv.

const (
	rOff = "no-quotas"
	rOn  = "seed-quotas"
)

// seedQuotas are the seed's quotas (configs/seed), what item 6 measures.
const seedQuotas = `    quotas:
      client: { producer_byte_rate: 1MiB, consumer_byte_rate: 2MiB }
      tenant: { producer_byte_rate: 2MiB }
      window: 1s
      max_throttle: 5s
`

const (
	seedProduceRate       = 1 << 20 // client producer_byte_rate
	seedConsumeRate       = 2 << 20 // client consumer_byte_rate
	seedTenantProduceRate = 2 << 20 // tenant producer_byte_rate
)

// The span of a run measured: seconds 4 to 14 of its first byte.
const (
	heldFrom = 4 * time.Second
	heldTo   = 14 * time.Second
)

// The neighbour: acme's clients start at neighbourAStart of globex's
// producer, for BENCH_NEIGHBOUR_A_SECONDS; globex runs
// BENCH_NEIGHBOUR_SECONDS. Its windows: alone before acme (the 10 s
// before acme starts: its own first seconds left out), beside acme (from
// acme's 2nd second to its end), alone after acme (from 2 s after its end
// to globex's last second).
const neighbourAStart = 16 * time.Second

// The libraries, in the table's order.
var reachedLibs = []string{"franz-go", "perf-test", "kcat", "confluent-kafka", "kafka-python"}

// reachedRun is one run of one library and direction on one gateway.
type reachedRun struct {
	lib, dir, gw string
	rep          int
	rate         float64 // bytes/s over seconds 4-14 (or what the run had past its 4th second)
	span         float64 // seconds that rate spans
	first        float64 // bytes of the first second
	p99          float64 // ms; NaN: none measured
	cpu          float64 // the gateway's CPU s (schedstat) over the run
	bytes        float64 // payload bytes of the run
	wall         float64
	rttOver      bool // p99: librdkafka's rtt max of a window past its histogram's 500 ms
	err          string
}

// ---- meters ----

type meterEv struct {
	t time.Time
	b float64
}

// meter is a sequence of byte counts at times.
type meter struct{ ev []meterEv }

func (m *meter) add(t time.Time, b float64) { m.ev = append(m.ev, meterEv{t, b}) }

// start is the time of the first bytes.
func (m *meter) start() time.Time {
	for _, e := range m.ev {
		if e.b > 0 {
			return e.t
		}
	}
	return time.Time{}
}

func (m *meter) total() float64 {
	var s float64
	for _, e := range m.ev {
		s += e.b
	}
	return s
}

// between is the bytes counted at times in (from, to]: an event counts
// what came in up to its time.
func (m *meter) between(from, to time.Time) float64 {
	var s float64
	for _, e := range m.ev {
		if e.t.After(from) && !e.t.After(to) {
			s += e.b
		}
	}
	return s
}

// held is the rate over (start+heldFrom, start+heldTo] and the seconds it
// spans: a run that ended before heldTo is measured from heldFrom to its
// last bytes, one that ended before heldFrom+1s from its first to its last.
// Within the span, from its first bytes to its last: the bytes after the
// first count over the time between them, so that a rate that comes in
// lumps (a batch of 1 MiB at the broker, an answer of 1 MiB a partition at
// the consumer) is not rounded to the lumps the window happens to hold.
func (m *meter) held() (rate, span float64) {
	s := m.start()
	if s.IsZero() {
		return nan, 0
	}
	last := s
	for _, e := range m.ev {
		if e.b > 0 && e.t.After(last) {
			last = e.t
		}
	}
	from, to := s.Add(heldFrom), s.Add(heldTo)
	if last.Before(to) {
		to = last
	}
	if to.Sub(from) < time.Second {
		// Too short to leave the first seconds out: the whole run.
		d := last.Sub(s).Seconds()
		if d <= 0 {
			return nan, 0
		}
		return m.between(s, last) / d, d
	}
	var t1, tk time.Time
	var after float64
	for _, e := range m.ev {
		if e.b <= 0 || !e.t.After(from) || e.t.After(to) {
			continue
		}
		if t1.IsZero() {
			t1 = e.t
		} else {
			after += e.b
		}
		tk = e.t
	}
	if d := tk.Sub(t1).Seconds(); d >= 1 {
		return after / d, d
	}
	d := to.Sub(from).Seconds()
	return m.between(from, to) / d, d
}

// firstSecond is the bytes counted in [start, start+1s].
func (m *meter) firstSecond() float64 {
	s := m.start()
	if s.IsZero() {
		return nan
	}
	return m.between(s.Add(-time.Nanosecond), s.Add(time.Second))
}

// latAt is a latency (ms) at a time.
type latAt struct {
	t  time.Time
	ms float64
}

// percentileIn is the p-th percentile (0-1) of the latencies at times in
// [from, to); NaN when none.
func percentileIn(l []latAt, from, to time.Time, p float64) float64 {
	var v []float64
	for _, x := range l {
		if !x.t.Before(from) && x.t.Before(to) {
			v = append(v, x.ms)
		}
	}
	return percentile(v, p)
}

func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return nan
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(len(s)-1, i))]
}

// maxIn is the highest latency at times in [from, to); NaN when none.
func maxIn(l []latAt, from, to time.Time) float64 {
	r := nan
	for _, x := range l {
		if !x.t.Before(from) && x.t.Before(to) && (math.IsNaN(r) || x.ms > r) {
			r = x.ms
		}
	}
	return r
}

// offsetMeter counts the records appended to a topic at the broker, every
// 100 ms, as bytes of size each: what every producer library let through,
// measured alike and at no cost to the gateway.
type offsetMeter struct {
	m    meter
	stop chan struct{}
	done chan struct{}
}

func (h *harness) startOffsetMeter(topic string, size int) *offsetMeter {
	om := &offsetMeter{stop: make(chan struct{}), done: make(chan struct{})}
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.broker))
	must(err)
	adm := kadm.NewClient(cl)
	read := func() (int64, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		lo, err := adm.ListEndOffsets(ctx, topic)
		if err != nil || lo.Error() != nil {
			return 0, false
		}
		var s int64
		lo.Each(func(o kadm.ListedOffset) { s += o.Offset })
		return s, true
	}
	last, ok := read()
	if !ok {
		die("the end offsets of %s: cannot read them at %s", topic, h.broker)
	}
	go func() {
		defer close(om.done)
		defer cl.Close()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-om.stop:
				return
			case <-tick.C:
			}
			if v, ok := read(); ok && v > last {
				om.m.add(time.Now(), float64(v-last)*float64(size))
				last = v
			}
		}
	}()
	return om
}

// end stops the meter (after a last poll) and returns it.
func (om *offsetMeter) end() *meter {
	time.Sleep(150 * time.Millisecond)
	close(om.stop)
	<-om.done
	return &om.m
}

// ---- running the tools ----

// timedLine is a line of a tool's stdout and when the harness read it.
type timedLine struct {
	t time.Time
	s string
}

// runLines runs a command for at most limit, reading its stdout line by
// line as it comes (each with the time read); stdin from a file if given.
// The output goes to logs/NNN-name.log (secret replaced).
func (h *harness) runLines(name string, env []string, stdin string, limit time.Duration, secret string, args ...string) ([]timedLine, string, error) {
	h.seq++
	logPath := filepath.Join(h.out, "logs", fmt.Sprintf("%03d-%s.log", h.seq, name))
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = h.root
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = dieWith(syscall.SIGKILL)
	if stdin != "" {
		f, err := os.Open(stdin)
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		cmd.Stdin = f
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	var lines []timedLine
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, timedLine{time.Now(), sc.Text()})
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s: not done within %v", name, limit)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "$ %s\n", strings.Join(redact(args, secret), " "))
	for _, l := range lines {
		fmt.Fprintf(&b, "%s %s\n", l.t.Format("15:04:05.000"), l.s)
	}
	fmt.Fprintf(&b, "---- stderr ----\n%s", stderr.String())
	_ = os.WriteFile(logPath, []byte(strings.ReplaceAll(b.String(), nonEmpty(secret), "<key>")), 0o644)
	if err != nil {
		return lines, stderr.String(), fmt.Errorf("%s: %v (log %s)\n%s", name, err, logPath, tail(stderr.String(), 1500))
	}
	return lines, stderr.String(), nil
}

func nonEmpty(s string) string {
	if s == "" {
		return "\x00never\x00"
	}
	return s
}

// reachedKey is a key of the part: its id and secret.
type reachedKey struct{ id, key string }

// addKey makes a key of tenant for the quota channel's operations with
// flexway keys new and appends its entry to the store (before the part's
// gateways start).
func (h *harness) addKey(id, tenant string) reachedKey {
	out, err := h.run("keys-new-"+id, nil, filepath.Join(h.bin, "flexway"), "keys", "new",
		"--id", id, "--tenant", tenant, "--operations", "quotaSend,quotaReceive",
		"--config", filepath.Join(h.work, "flexway.yaml"))
	must(err)
	lines := strings.Split(out, "\n")
	var key string
	var entry []string
	for i, l := range lines {
		if strings.HasPrefix(l, "# The key") && i+1 < len(lines) {
			key = strings.TrimSpace(lines[i+1])
		}
		if strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "- id:") {
			entry = append(entry, l)
		}
	}
	if key == "" || len(entry) == 0 {
		die("cannot read the output of flexway keys new:\n%s", out)
	}
	store := filepath.Join(h.work, "api-keys.yaml")
	data, err := os.ReadFile(store)
	must(err)
	must(os.WriteFile(store, []byte(strings.TrimRight(string(data), "\n")+"\n"+strings.Join(entry, "\n")+"\n"), 0o600))
	for _, m := range mustGlob(filepath.Join(h.out, "logs", "*keys-new-"+id+".log")) {
		if data, err := os.ReadFile(m); err == nil {
			_ = os.WriteFile(m, []byte(strings.ReplaceAll(string(data), key, "<key>")), 0o644)
		}
	}
	return reachedKey{id, key}
}

// reachedEnv is what the part's runs share.
type reachedEnv struct {
	acme   []reachedKey // three keys of tenant acme
	globex reachedKey
	nP, nC int    // records of a producer's and a consumer's run
	noise  string // kcat's input: nP records of 1 KiB, newline-separated
	dir    string // the work folder of the part (scripts, properties)
}

// javaProps writes the Java tools' SASL properties for k.
func (e *reachedEnv) javaProps(k reachedKey) string {
	f := filepath.Join(e.dir, k.id+".properties")
	must(os.WriteFile(f, []byte(fmt.Sprintf(`security.protocol=SASL_PLAINTEXT
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="%s" password="%s";
`, k.id, k.key)), 0o600))
	return f
}

// kcatConf writes librdkafka's properties (kcat -F) for k.
func (e *reachedEnv) kcatConf(k reachedKey) string {
	f := filepath.Join(e.dir, k.id+".kcat")
	must(os.WriteFile(f, []byte(fmt.Sprintf("security.protocol=SASL_PLAINTEXT\nsasl.mechanisms=PLAIN\nsasl.username=%s\nsasl.password=%s\n", k.id, k.key)), 0o600))
	return f
}

// writeNoise writes n records of size random bytes, none a newline, each
// ended by one (kcat -P's input).
func writeNoise(path string, n, size int) {
	b := make([]byte, n*(size+1))
	_, _ = rand.Read(b)
	for i := range b {
		if b[i] == '\n' {
			b[i] = 0x0b
		}
		if i%(size+1) == size {
			b[i] = '\n'
		}
	}
	must(os.WriteFile(path, b, 0o600))
}

// toolOut is what a tool's run gives the part: the consumer's meter (nil
// for a producer: the broker's offsets measure it), its latencies.
type toolOut struct {
	m    *meter
	lat  []latAt // request latencies (ms) at their times
	p99  float64 // a p99 the tool printed (NaN: none)
	rtts []latAt // librdkafka's rtt p99 of each statistics window (ms)
	// rttOver: a window's rtt past librdkafka's histogram (500 ms), its max taken
	rttOver bool
}

// parseClientLines reads harness client's lines (client.go): the records
// read (C) into a meter, the requests' latencies (Q) of api key (0
// Produce, 1 Fetch), and the records acknowledged (P) with theirs.
func parseClientLines(lines []timedLine, key int) (read *meter, acked *meter, reqs, recs []latAt) {
	read, acked = &meter{}, &meter{}
	for _, l := range lines {
		f := strings.Fields(l.s)
		if len(f) < 4 {
			continue
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		at := time.Unix(0, ns)
		a, _ := strconv.ParseFloat(f[2], 64)
		b, _ := strconv.ParseFloat(f[3], 64)
		switch f[0] {
		case "C":
			read.add(at, a)
		case "P":
			acked.add(at, a)
			recs = append(recs, latAt{at, b / 1000})
		case "Q":
			if int(a) == key {
				reqs = append(reqs, latAt{at, b / 1000})
			}
		}
	}
	return
}

// parsePerfConsumerDetail reads kafka-consumer-perf-test's
// --show-detailed-stats lines (each second: the time, the MB read so far,
// the ms of it spent fetching) into a meter: a line's bytes at the middle
// of its fetching time, the meter's start where the first line's fetching
// began (its first second holds the group's join). The last part of a
// second is not printed.
func parsePerfConsumerDetail(out string) *meter {
	m := &meter{}
	var head []string
	var last float64
	for _, l := range strings.Split(out, "\n") {
		f := splitCSV(l)
		if len(f) > 0 && f[0] == "time" {
			head = f
			continue
		}
		if head == nil || len(f) != len(head) {
			continue
		}
		ts := f[0]
		if i := strings.LastIndexByte(ts, ':'); i > 0 {
			ts = ts[:i] + "." + ts[i+1:]
		}
		at, err := time.ParseInLocation("2006-01-02 15:04:05.000", ts, time.Local)
		if err != nil {
			continue
		}
		mib, span := 0.0, time.Second
		for i, k := range head {
			switch k {
			case "data.consumed.in.MB":
				mib, _ = strconv.ParseFloat(f[i], 64)
			case "fetch.time.ms":
				if ms, err := strconv.ParseFloat(f[i], 64); err == nil && ms > 0 && ms < 1000 {
					span = time.Duration(ms * float64(time.Millisecond))
				}
			}
		}
		if mib <= last {
			continue
		}
		if len(m.ev) == 0 {
			m.add(at.Add(-span), 1e-9)
		}
		m.add(at.Add(-span/2), (mib-last)*(1<<20))
		last = mib
	}
	return m
}

// parsePyLines reads the python scripts' lines: "E <unix s> <bytes>" a
// record read, "R <unix s> <p99 µs> <max µs>" librdkafka's rtt of a
// statistics window (the highest over the brokers that answered in it).
// librdkafka's rtt histogram ends at 500 ms: past it the p99 reads 0, and
// the window's max stands for it (over: true).
func parsePyLines(lines []timedLine) (m *meter, rtts []latAt, over bool) {
	m = &meter{}
	for _, l := range lines {
		f := strings.Fields(l.s)
		if len(f) < 3 {
			continue
		}
		s, err1 := strconv.ParseFloat(f[1], 64)
		v, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		at := time.Unix(0, int64(s*1e9))
		switch f[0] {
		case "E":
			m.add(at, v)
		case "R":
			if len(f) == 4 {
				if mx, err := strconv.ParseFloat(f[3], 64); err == nil && v == 0 && mx > 0 {
					v, over = mx, true
				}
			}
			rtts = append(rtts, latAt{at, v / 1000})
		}
	}
	return m, rtts, over
}

const pyCommon = `
import sys, time, os, json
boot, user, n, size, topic = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
pw = os.environ["PY_KEY"]
noise = os.urandom(4 << 20)
def value(i):
    off = (i * 4093) % (len(noise) - size)
    return noise[off:off + size]
errs = []
out = sys.stdout
def stats(js):
    d = json.loads(js)
    bs = [b["rtt"] for b in d.get("brokers", {}).values() if b.get("rtt", {}).get("cnt", 0) > 0 and b.get("nodeid", -1) >= 0]
    if bs:
        out.write("R %.6f %d %d\n" % (time.time(), max(r["p99"] for r in bs), max(r["max"] for r in bs)))
`

// confluent-kafka: librdkafka's defaults; statistics each second for the rtt.
const pyConfluentProducer = pyCommon + `
from confluent_kafka import Producer
done = [0]
def dr(err, msg):
    if err is not None:
        errs.append(str(err))
    else:
        done[0] += 1
p = Producer({"bootstrap.servers": boot, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
              "sasl.username": user, "sasl.password": pw, "statistics.interval.ms": 1000, "stats_cb": stats})
for i in range(n):
    while True:
        try:
            p.produce(topic, value=value(i), on_delivery=dr)
            break
        except BufferError:
            p.poll(0.05)
    p.poll(0)
p.flush(120)
out.flush()
if errs or done[0] < n:
    sys.exit("%d of %d records; errors: %r" % (done[0], n, errs[:5]))
`

const pyConfluentConsumer = pyCommon + `
from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
c = Consumer({"bootstrap.servers": boot, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
              "sasl.username": user, "sasl.password": pw, "group.id": "flexway-bench-reached",
              "statistics.interval.ms": 1000, "stats_cb": stats})
md = c.list_topics(topic, timeout=10)
c.assign([TopicPartition(topic, x, OFFSET_BEGINNING) for x in sorted(md.topics[topic].partitions)])
got, deadline = 0, time.time() + 120
while got < n and time.time() < deadline:
    m = c.poll(0.5)
    if m is None:
        continue
    if m.error():
        errs.append(str(m.error()))
        continue
    got += 1
    out.write("E %.6f %d\n" % (time.time(), len(m.value())))
c.close()
out.flush()
if errs or got < n:
    sys.exit("%d of %d records; errors: %r" % (got, n, errs[:5]))
`

// kafka-python: its defaults; api_version given (it cannot probe the
// gateway's).
const pyKafkaProducer = pyCommon + `
from kafka import KafkaProducer
p = KafkaProducer(bootstrap_servers=boot, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                  sasl_plain_username=user, sasl_plain_password=pw, api_version=(2, 5, 0))
done = [0]
def ok(md):
    done[0] += 1
def failed(e):
    errs.append(repr(e))
for i in range(n):
    p.send(topic, value=value(i)).add_callback(ok).add_errback(failed)
p.flush(timeout=120)
p.close(timeout=5)
out.flush()
if errs or done[0] < n:
    sys.exit("%d of %d records; errors: %r" % (done[0], n, errs[:5]))
`

const pyKafkaConsumer = pyCommon + `
from kafka import KafkaConsumer, TopicPartition
c = KafkaConsumer(bootstrap_servers=boot, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                  sasl_plain_username=user, sasl_plain_password=pw, api_version=(2, 5, 0))
tps = [TopicPartition(topic, x) for x in sorted(c.partitions_for_topic(topic) or [])]
c.assign(tps)
c.seek_to_beginning(*tps)
got, deadline = 0, time.time() + 120
while got < n and time.time() < deadline:
    for tp, recs in c.poll(timeout_ms=500).items():
        now = time.time()
        for r in recs:
            got += 1
            out.write("E %.6f %d\n" % (now, len(r.value)))
c.close()
out.flush()
if got < n:
    sys.exit("%d of %d records" % (got, n))
`

// runTool runs library lib in direction dir ("produce", "consume")
// through gateway gw as key k.
func (h *harness) runTool(e *reachedEnv, lib, dir, gw string, k reachedKey) (toolOut, error) {
	boot := h.bootstrap(gw)
	limit := 120 * time.Second
	o := toolOut{p99: nan}
	produce := dir == "produce"
	n := e.nC
	if produce {
		n = e.nP
	}
	name := fmt.Sprintf("reached-%s-%s-%s", lib, dir, gw)
	switch lib {
	case "franz-go":
		self, err := os.Executable()
		must(err)
		args := []string{self, "client", "-brokers", boot, "-topic", "quota", "-users", k.id, "-n", strconv.Itoa(n),
			"-seconds", strconv.Itoa(int(limit.Seconds()) - 5), "-" + dir}
		lines, _, err := h.runLines(name, []string{"HARNESS_CLIENT_KEYS=" + k.key}, "", limit, k.key, args...)
		if err != nil {
			return o, err
		}
		key := 1
		if produce {
			key = 0
		}
		read, _, reqs, _ := parseClientLines(lines, key)
		if !produce {
			o.m = read
		}
		o.lat = reqs
		return o, nil
	case "perf-test":
		tool := filepath.Join(h.root, "scripts", "kafka-tool.sh")
		if produce {
			args := []string{tool, "org.apache.kafka.tools.ProducerPerformance", "--topic", "quota", "--num-records", strconv.Itoa(n),
				"--record-size", "1024", "--throughput", "-1",
				envStr("KAFKA_PERF_PROPS_FLAG", "--producer-props"), "bootstrap.servers=" + boot,
				envStr("KAFKA_PERF_CONFIG_FLAG", "--producer.config"), e.javaProps(k)}
			lines, _, err := h.runLines(name, nil, "", limit, k.key, args...)
			if err != nil {
				return o, err
			}
			r, err := parsePerfProducer(joinLines(lines), 1024, n)
			if err != nil {
				return o, err
			}
			o.p99 = r.p99
			return o, nil
		}
		args := []string{tool, "org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", boot, "--topic", "quota",
			"--messages", strconv.Itoa(n), "--timeout", "60000", consumerConfigFlag(), e.javaProps(k),
			"--show-detailed-stats", "--reporting-interval", "1000"}
		lines, _, err := h.runLines(name, nil, "", limit, k.key, args...)
		if err != nil {
			return o, err
		}
		o.m = parsePerfConsumerDetail(joinLines(lines))
		return o, nil
	case "kcat":
		if produce {
			_, _, err := h.runLines(name, nil, e.noise, limit, k.key, "kcat", "-F", e.kcatConf(k), "-b", boot, "-P", "-t", "quota")
			return o, err
		}
		lines, _, err := h.runLines(name, nil, "", limit, k.key, "kcat", "-F", e.kcatConf(k), "-b", boot, "-C", "-t", "quota",
			"-o", "beginning", "-c", strconv.Itoa(n), "-u", "-f", "%S\n")
		if err != nil {
			return o, err
		}
		m := &meter{}
		for _, l := range lines {
			if v, err := strconv.Atoi(strings.TrimSpace(l.s)); err == nil {
				m.add(l.t, float64(v))
			}
		}
		o.m = m
		return o, nil
	case "confluent-kafka", "kafka-python":
		script := map[string]string{"confluent-kafka produce": pyConfluentProducer, "confluent-kafka consume": pyConfluentConsumer,
			"kafka-python produce": pyKafkaProducer, "kafka-python consume": pyKafkaConsumer}[lib+" "+dir]
		path := filepath.Join(e.dir, strings.ReplaceAll(lib, "-", "_")+"_"+dir+".py")
		must(os.WriteFile(path, []byte(script), 0o600))
		lines, _, err := h.runLines(name, []string{"PY_KEY=" + k.key}, "", limit, k.key,
			pythonBin(), path, boot, k.id, strconv.Itoa(n), "1024", "quota")
		if err != nil {
			return o, err
		}
		m, rtts, over := parsePyLines(lines)
		if !produce {
			o.m = m
		}
		o.rtts, o.rttOver = rtts, over
		return o, nil
	}
	return o, fmt.Errorf("unknown library %q", lib)
}

func joinLines(l []timedLine) string {
	var b strings.Builder
	for _, x := range l {
		b.WriteString(x.s)
		b.WriteByte('\n')
	}
	return b.String()
}

// pythonBin is the python3 with confluent_kafka and kafka (the system's).
func pythonBin() string {
	return envStr("BENCH_PYTHON", "/usr/bin/python3")
}

// pyHas says whether python has module mod.
func pyHas(mod string) bool {
	return exec.Command(pythonBin(), "-c", "import "+mod).Run() == nil
}

// ---- the part ----

func (h *harness) reachedPart() {
	t0 := time.Now()
	repeat := envInt("BENCH_REACHED_REPEAT", 3)
	base := envInt("BENCH_REACHED_PORT", 29122)
	e := &reachedEnv{nP: envInt("BENCH_REACHED_PRODUCE_MIB", 18) << 10, nC: envInt("BENCH_REACHED_CONSUME_MIB", 36) << 10,
		dir: filepath.Join(h.work, "reached")}
	must(os.MkdirAll(e.dir, 0o700))
	libs := reachedLibList(envStr("BENCH_REACHED_LIBS", strings.Join(reachedLibs, ",")))
	var notes []string
	var use []string
	for _, l := range libs {
		switch {
		case l == "kcat" && !haveBin("kcat"):
			notes = append(notes, "kcat: not installed, left out")
		case l == "confluent-kafka" && !pyHas("confluent_kafka"):
			notes = append(notes, "confluent-kafka: not importable by "+pythonBin()+", left out")
		case l == "kafka-python" && !pyHas("kafka"):
			notes = append(notes, "kafka-python: not importable by "+pythonBin()+", left out")
		default:
			use = append(use, l)
		}
	}
	// The part's own keys and topics: acme's three, globex's one, on the
	// quota channel ({tenant}.quota), fresh.
	for i := 1; i <= 3; i++ {
		e.acme = append(e.acme, h.addKey(fmt.Sprintf("reach-acme-%d", i), "acme"))
	}
	e.globex = h.addKey("reach-globex", "globex")
	for _, t := range []string{"acme.quota", "globex.quota"} {
		if _, err := h.kafkaTool("topic-"+t, "org.apache.kafka.tools.TopicCommand",
			"--bootstrap-server", h.broker, "--create", "--if-not-exists", "--topic", t,
			"--partitions", "3", "--replication-factor", "1",
			"--config", "retention.bytes=2147483648", "--config", "segment.bytes=268435456"); err != nil {
			die("%v", err)
		}
	}
	// What the consumers read: nC records of 1 KiB written at the broker.
	if _, err := h.loadgen(direct, "produce", e.nC+1024, 1024, 0, 5*time.Millisecond, "-topic", "acme.quota"); err != nil {
		die("filling acme.quota: %v", err)
	}
	e.noise = filepath.Join(e.dir, "noise.bin")
	writeNoise(e.noise, e.nP, 1024)

	h.startQuotaGateway(rOff, base, envStr("BENCH_REACHED_ADMIN", "127.0.0.1:29470"), "", "")
	h.startQuotaGateway(rOn, base+3, envStr("BENCH_REACHED_ADMIN_ON", "127.0.0.1:29471"), seedQuotas, "")
	defer func() {
		for _, g := range []string{rOff, rOn} {
			if gp := h.quotaGW[g]; gp != nil {
				gp.stop()
				delete(h.quotaGW, g)
			}
		}
	}()
	load, _ := os.ReadFile("/proc/loadavg")
	h.say("quotas reached: %v, produce %d and consume %d records of 1 KiB, %d runs each, gateways %s and %s in turn; load average %s",
		use, e.nP, e.nC, repeat, rOn, rOff, strings.TrimSpace(string(load)))

	k := e.acme[0]
	var loads []string
	for _, lib := range use {
		for _, dir := range []string{"produce", "consume"} {
			for rep := 1; rep <= repeat; rep++ {
				for _, gw := range order(rep, rOn, rOff) {
					h.reachedOne(e, lib, dir, gw, rep, k)
				}
			}
			l, _ := os.ReadFile("/proc/loadavg")
			loads = append(loads, lib+" "+dir+" "+strings.Fields(string(l))[0])
		}
	}
	nbs := []*neighbourResult{h.neighbour(e, rOn, nil)}
	if envStr("BENCH_NEIGHBOUR_CONTRAST", "1") == "1" {
		nbs = append(nbs, h.neighbour(e, rOff, nil))
	}
	if envStr("BENCH_NEIGHBOUR_FLOOR", "1") == "1" {
		nbs = append(nbs, h.neighbour(e, direct, floorPace()))
		if lumpPace().burst > 1 {
			nbs = append(nbs, h.neighbour(e, direct, lumpPace()))
		}
	}
	if envStr("BENCH_NEIGHBOUR_RELAY", "1") == "1" {
		h.startRelay()
		nbs = append(nbs, h.neighbour(e, relay, lumpPace()))
		h.stopRelay()
	}
	thr, err := metricSum(h.quotaGW[rOn].admin, "flexway_kafka_throttle_seconds_count")
	if err == nil {
		notes = append(notes, fmt.Sprintf("%s: %.0f throttled answers over the part (flexway_kafka_throttle_seconds_count)", rOn, thr))
	}
	h.reachedRuns()
	md := reachedTable(h.reached, nbs, repeat, use, loads, notes)
	must(os.WriteFile(filepath.Join(h.out, "quota-reached.md"), []byte(md), 0o644))
	fmt.Println()
	fmt.Println(md)
	h.say("quotas reached: %.0f s", time.Since(t0).Seconds())
}

func haveBin(b string) bool { _, err := exec.LookPath(b); return err == nil }

// reachedLibList reads BENCH_REACHED_LIBS: the libraries, comma-separated;
// "none" (or nothing): none, the neighbour alone.
func reachedLibList(v string) []string {
	var out []string
	for _, l := range strings.Split(v, ",") {
		if l = strings.TrimSpace(l); l != "" && l != "none" {
			out = append(out, l)
		}
	}
	return out
}

// envFloat reads a number of the environment (def when unset).
func envFloat(k string, def float64) float64 {
	if v := os.Getenv(k); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			die("%s=%q: not a number of 0 or more", k, v)
		}
		return f
	}
	return def
}

// reachedOne runs one library and direction on one gateway and records it.
func (h *harness) reachedOne(e *reachedEnv, lib, dir, gw string, rep int, k reachedKey) {
	var om *offsetMeter
	if dir == "produce" {
		om = h.startOffsetMeter("acme.quota", 1024)
	}
	var o toolOut
	var runErr error
	sc := fmt.Sprintf("%s %s (quotas reached)", lib, dir)
	r := h.measure(sc, gw, rep, func() (result, error) {
		o, runErr = h.runTool(e, lib, dir, gw, k)
		n := e.nC
		if dir == "produce" {
			n = e.nP
		}
		res := result{p50: nan, p90: nan, p95: nan, p99: nan, p999: nan, bytes: float64(n) * 1024}
		if runErr != nil {
			res.note = "failed"
		}
		return res, nil
	})
	m := o.m
	if om != nil {
		m = om.end()
	}
	rr := reachedRun{lib: lib, dir: dir, gw: gw, rep: rep, rate: nan, first: nan, p99: nan, cpu: r.hopSched, bytes: r.bytes, wall: r.wall}
	if runErr != nil {
		rr.err = runErr.Error()
		h.say("    %s", tail(rr.err, 1500))
	}
	if m != nil {
		rr.rate, rr.span = m.held()
		rr.first = m.firstSecond()
		s := m.start()
		if !s.IsZero() {
			from, to := s.Add(heldFrom), s.Add(heldTo)
			// A run too short for the span: its whole run.
			all0, all1 := time.Unix(0, 0), time.Unix(1<<40, 0)
			switch {
			case len(o.lat) > 0:
				if rr.p99 = percentileIn(o.lat, from, to, 0.99); math.IsNaN(rr.p99) {
					rr.p99 = percentileIn(o.lat, all0, all1, 0.99)
				}
			case len(o.rtts) > 0:
				if rr.p99 = maxIn(o.rtts, from, to); math.IsNaN(rr.p99) {
					rr.p99 = maxIn(o.rtts, all0, all1)
				}
				rr.rttOver = o.rttOver
			}
		}
	}
	if math.IsNaN(rr.p99) && !math.IsNaN(o.p99) {
		rr.p99 = o.p99
	}
	h.reached = append(h.reached, rr)
	if m != nil {
		h.saveMeter(lib, dir, gw, rep, m)
	}
	h.say("    %-16s %-7s %-11s run %d: %.3f MiB/s over %.1f s, first second %.2f MiB, p99 %s ms, gateway CPU %.3f s/GiB%s",
		lib, dir, gw, rep, rr.rate/(1<<20), rr.span, rr.first/(1<<20), fmtMS(rr.p99), rr.cpuPerGiB(), map[bool]string{true: " FAILED"}[rr.err != ""])
}

func (r reachedRun) cpuPerGiB() float64 {
	if r.bytes <= 0 || r.cpu <= 0 {
		return nan
	}
	return r.cpu / (r.bytes / (1 << 30))
}

// saveMeter appends a run's meter to quota-reached-meters.tsv (each
// count at its time), from which the rates can be computed again.
func (h *harness) saveMeter(lib, dir, gw string, rep int, m *meter) {
	f := h.appendTSV("quota-reached-meters.tsv", "library\tdirection\tgateway\trun\tunix_ns\tbytes")
	if f == nil {
		return
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	defer w.Flush()
	for _, e := range m.ev {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%.0f\n", lib, dir, gw, rep, e.t.UnixNano(), e.b)
	}
}

// reachedRuns writes quota-reached-runs.tsv.
func (h *harness) reachedRuns() {
	var b strings.Builder
	fmt.Fprintln(&b, "library\tdirection\tgateway\trun\tmib_s_held\tspan_s\tfirst_second_mib\tp99_ms\tcpu_s\tbytes\tcpu_s_per_gib\twall_s\terror")
	for _, r := range h.reached {
		fmt.Fprintf(&b, "%s\t%s\t%s\t%d\t%.4f\t%.1f\t%.3f\t%.2f\t%.4f\t%.0f\t%.3f\t%.2f\t%s\n", r.lib, r.dir, r.gw, r.rep,
			r.rate/(1<<20), r.span, r.first/(1<<20), r.p99, r.cpu, r.bytes, r.cpuPerGiB(), r.wall, strings.ReplaceAll(r.err, "\n", " "))
	}
	must(os.WriteFile(filepath.Join(h.out, "quota-reached-runs.tsv"), []byte(b.String()), 0o644))
}

// ---- the noisy neighbour ----

// nbWindow is globex's figures in one window.
type nbWindow struct {
	name     string
	from, to float64 // seconds of globex's start
	mib      float64 // acknowledged MiB/s
	p50, p99 float64 // ms, a record's latency from Produce to its acknowledgement
	req      float64 // ms, p99 of its Produce requests
	n        int     // records acknowledged
}

// neighbourResult is item 7's figures: globex's producer alone and beside
// acme's clients.
type neighbourResult struct {
	rate               int     // globex's records/s
	gw                 string  // the gateway (rOn, or rOff for the contrast), or direct (the floor)
	pace               *nbPace // the floor: acme's clients paced at these rates (nil: flat out)
	acme               int     // acme's keys (clients of each direction)
	win                []nbWindow
	aProduce, aConsume float64 // acme's MiB/s, all keys (produce: at the broker)
	err                string
}

// nbPace is the floor's pacing of acme's clients: what the seed's quotas
// hold them to through the gateway (issue 22.7 measured 1.92 MiB/s
// produced in all, 5.90 MiB/s read in all, three keys).
type nbPace struct {
	produce float64 // MiB/s, acme's producers in all (the tenant's producer_byte_rate), split evenly
	consume float64 // MiB/s, each consumer (a key's consumer_byte_rate)
	burst   int     // records a producer sends at once (1: evenly spaced): the lumps of a held client
}

// floorPace is BENCH_NEIGHBOUR_FLOOR_PRODUCE_MIB_S and _CONSUME_MIB_S, the
// seed's quotas by default.
func floorPace() *nbPace {
	return &nbPace{
		produce: envFloat("BENCH_NEIGHBOUR_FLOOR_PRODUCE_MIB_S", float64(seedTenantProduceRate)/(1<<20)),
		consume: envFloat("BENCH_NEIGHBOUR_FLOOR_CONSUME_MIB_S", float64(seedConsumeRate)/(1<<20)),
		burst:   1,
	}
}

// lumpPace is the floor of the same shape as a held client's load: acme's
// producers at the same rates, each sending BENCH_NEIGHBOUR_FLOOR_BURST
// records (1,024: 1 MiB, franz-go's batch) at once, as a producer held by
// KIP-219 sends what it batched during its mute.
func lumpPace() *nbPace {
	p := floorPace()
	p.burst = envInt("BENCH_NEIGHBOUR_FLOOR_BURST", 1024)
	return p
}

// neighbourArgs is the harness client arguments of globex's producer and
// of acme's clients (keys ids), through bootstrap boot, or with pace
// direct to the broker at boot: no SASL, the broker's topics, acme's
// clients paced (1 KiB records: MiB/s × 1024 records/s; the producers'
// rate split over the keys).
func neighbourArgs(boot string, pace *nbPace, noSASL bool, rate, secs, aSecs int, globex string, acme []string) (b, a []string) {
	bTopic, aTopic := "quota", "quota"
	if pace != nil {
		bTopic, aTopic = "globex.quota", "acme.quota"
	}
	b = []string{"client", "-brokers", boot, "-topic", bTopic, "-users", globex, "-produce", "-rate", strconv.Itoa(rate),
		"-seconds", strconv.Itoa(secs)}
	a = []string{"client", "-brokers", boot, "-topic", aTopic, "-users", strings.Join(acme, ","), "-produce", "-consume",
		"-seconds", strconv.Itoa(aSecs)}
	if pace != nil {
		if noSASL {
			b, a = append(b, "-direct"), append(a, "-direct")
		}
		a = append(a, "-rate", strconv.FormatFloat(pace.produce*1024/float64(len(acme)), 'f', 3, 64),
			"-consume-rate", strconv.FormatFloat(pace.consume*1024, 'f', 3, 64), "-burst", strconv.Itoa(max(1, pace.burst)))
	}
	return b, a
}

// neighbour runs item 7's scenario through gateway gw, or with pace
// (gw direct) without a gateway: the floor.
func (h *harness) neighbour(e *reachedEnv, gw string, pace *nbPace) *neighbourResult {
	rate := envInt("BENCH_NEIGHBOUR_RATE", 512)
	secs := envInt("BENCH_NEIGHBOUR_SECONDS", 52)
	aSecs := envInt("BENCH_NEIGHBOUR_A_SECONDS", 21)
	nb := &neighbourResult{rate: rate, gw: gw, pace: pace, acme: len(e.acme)}
	self, err := os.Executable()
	must(err)
	boot := h.bootstrap(gw)
	var ids, keys []string
	for _, k := range e.acme {
		ids, keys = append(ids, k.id), append(keys, k.key)
	}
	bEnv, aEnv := []string{"HARNESS_CLIENT_KEYS=" + e.globex.key}, []string{"HARNESS_CLIENT_KEYS=" + strings.Join(keys, ",")}
	globex := e.globex.id
	switch {
	case pace != nil && gw == relay:
		// The relay's floor: every client through the splice relay to the
		// broker's RELAY listener, as the broker's user (its topics).
		boot, globex = h.relayBoot, h.relayUser
		for i := range ids {
			ids[i], keys[i] = h.relayUser, h.relayPass
		}
		bEnv, aEnv = []string{"HARNESS_CLIENT_KEYS=" + h.relayPass}, []string{"HARNESS_CLIENT_KEYS=" + strings.Join(keys, ",")}
		h.say("noisy neighbour, the relay's floor: through the splice relay (%s): globex produces %d records/s of 1 KiB for %d s; acme's %d clients produce %.3f MiB/s in all (lumps of %d) and consume %.3f MiB/s each, paced, from second %.0f for %d s",
			boot, rate, secs, len(e.acme), pace.produce, pace.burst, pace.consume, neighbourAStart.Seconds(), aSecs)
	case pace != nil:
		boot, bEnv, aEnv = h.broker, nil, nil
		h.say("noisy neighbour, the floor: direct to the broker (%s, no SASL): globex produces %d records/s of 1 KiB for %d s; acme's %d clients produce %.3f MiB/s in all and consume %.3f MiB/s each, paced, from second %.0f for %d s",
			boot, rate, secs, len(e.acme), pace.produce, pace.consume, neighbourAStart.Seconds(), aSecs)
	default:
		h.say("noisy neighbour through %s: globex produces %d records/s of 1 KiB for %d s; acme's %d keys produce and consume flat out from second %.0f for %d s", gw,
			rate, secs, len(e.acme), neighbourAStart.Seconds(), aSecs)
	}
	bArgs, aArgs := neighbourArgs(boot, pace, gw == direct, rate, secs, aSecs, globex, ids)
	var gwBefore map[string]float64
	if gp := h.quotaGW[gw]; pace == nil && gp != nil {
		gwBefore = gatewayCounts(gp.admin)
	}
	om := h.startOffsetMeter("acme.quota", 1024)
	var bLines, aLines []timedLine
	var bErr, aErr error
	var wg sync.WaitGroup
	bStart := time.Now()
	wg.Add(1)
	go func() {
		defer wg.Done()
		bLines, _, bErr = h.runLines("neighbour-globex-"+gw, bEnv, "", time.Duration(secs+60)*time.Second, e.globex.key,
			append([]string{self}, bArgs...)...)
	}()
	time.Sleep(neighbourAStart)
	aStart := time.Now()
	aLines, _, aErr = h.runLines("neighbour-acme-"+gw, aEnv, "", time.Duration(aSecs+60)*time.Second, "",
		append([]string{self}, aArgs...)...)
	aEnd := time.Now()
	wg.Wait()
	am := om.end()
	for _, er := range []error{bErr, aErr} {
		if er != nil {
			nb.err += er.Error() + "; "
		}
	}
	_, bAcked, bReqs, bRecs := parseClientLines(bLines, 0)
	aRead, _, _, _ := parseClientLines(aLines, 1)
	aFrom, aTo := aStart.Sub(bStart).Seconds(), aEnd.Sub(bStart).Seconds()
	nbFill(nb, bStart, []nbWindow{
		{name: "alone, before acme", from: max(1, aFrom-10), to: aFrom},
		{name: "beside acme", from: aFrom + 1, to: aTo},
		{name: "alone, after acme", from: aTo + 2, to: float64(secs) - 1},
	}, bAcked, bReqs, bRecs)
	// acme's rates over its run past its first second.
	d := aEnd.Sub(aStart.Add(time.Second)).Seconds()
	nb.aProduce = am.between(aStart.Add(time.Second), aEnd) / d / (1 << 20)
	nb.aConsume = aRead.between(aStart.Add(time.Second), aEnd) / d / (1 << 20)
	for _, w := range nb.win {
		h.say("noisy neighbour: globex %s (s %.0f-%.0f): %.3f MiB/s, p50/p99 %s/%s ms, Produce p99 %s ms", w.name, w.from, w.to,
			w.mib, fmtMS(w.p50), fmtMS(w.p99), fmtMS(w.req))
	}
	h.say("noisy neighbour: acme produced %.2f MiB/s, read %.2f MiB/s %s", nb.aProduce, nb.aConsume, nb.err)
	if gp := h.quotaGW[gw]; gwBefore != nil && gp != nil {
		h.say("noisy neighbour: the gateway over the run: %s", countsDelta(gwBefore, gatewayCounts(gp.admin)))
	}
	return nb
}

// gatewayCountsOf are the series a neighbour run reads of its gateway (item
// 7): how long traffic events held the loop, the pauses, globex's waits.
var gatewayCountsOf = []string{
	`flexway_engine_loop_event_seconds_count`,
	`flexway_engine_loop_event_seconds_bucket{le="0.01"}`,
	`flexway_engine_loop_event_seconds_bucket{le="0.05"}`,
	`flexway_engine_loop_event_seconds_bucket{le="0.1"}`,
	`flexway_engine_loop_task_seconds_count{task="run"}`,
	`flexway_engine_loop_task_seconds_bucket{task="run",le="0.001"}`,
	`flexway_engine_loop_task_seconds_bucket{task="run",le="0.01"}`,
	`flexway_engine_loop_task_seconds_count{task="unmute"}`,
	`flexway_engine_loop_task_seconds_bucket{task="unmute",le="0.001"}`,
	`flexway_engine_loop_task_seconds_bucket{task="unmute",le="0.01"}`,
	`flexway_engine_loop_task_seconds_count{task="resume"}`,
	`flexway_engine_loop_task_seconds_bucket{task="resume",le="0.001"}`,
	`flexway_engine_loop_task_seconds_bucket{task="resume",le="0.01"}`,
	`flexway_engine_read_pauses_total`,
	`flexway_engine_peer_pauses_total`,
	`flexway_engine_splice_room_outs_total`,
	`flexway_kafka_tenant_budget_wait_seconds_count`,
}

// gatewayCounts reads gatewayCountsOf at admin (nil when it cannot).
func gatewayCounts(admin string) map[string]float64 {
	out := map[string]float64{}
	for _, n := range gatewayCountsOf {
		v, err := metricSum(admin, n)
		if err != nil {
			return nil
		}
		out[n] = v
	}
	return out
}

// countsDelta says what each series counted between a and b.
func countsDelta(a, b map[string]float64) string {
	if a == nil || b == nil {
		return "unread"
	}
	var parts []string
	for _, n := range gatewayCountsOf {
		parts = append(parts, fmt.Sprintf("%s +%.0f", n, b[n]-a[n]))
	}
	return strings.Join(parts, ", ")
}

// nbFill computes globex's figures in the windows (seconds of its start).
func nbFill(nb *neighbourResult, start time.Time, win []nbWindow, acked *meter, reqs, recs []latAt) {
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	for _, w := range win {
		w0, w1 := at(w.from), at(w.to)
		w.mib = acked.between(w0, w1) / (w.to - w.from) / (1 << 20)
		w.p50, w.p99 = percentileIn(recs, w0, w1, 0.50), percentileIn(recs, w0, w1, 0.99)
		w.req = percentileIn(reqs, w0, w1, 0.99)
		for _, r := range recs {
			if !r.t.Before(w0) && r.t.Before(w1) {
				w.n++
			}
		}
		nb.win = append(nb.win, w)
	}
}

// ---- the table ----

func reachedTable(runs []reachedRun, nbs []*neighbourResult, repeat int, libs, loads, notes []string) string {
	var b strings.Builder
	if len(libs) > 0 {
		libTable(&b, runs, repeat, libs)
	} else {
		fmt.Fprintf(&b, "Quotas reached (issue 22.6): no library run (BENCH_REACHED_LIBS=none); the noisy neighbour only.\n\n")
	}
	if len(loads) > 0 {
		fmt.Fprintf(&b, "- Load average (1 min) after each library and direction: %s.\n", strings.Join(loads, ", "))
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	for _, r := range runs {
		if r.err != "" {
			fmt.Fprintf(&b, "- Failed (left out of the figures): %s %s on %s, run %d: %s\n", r.lib, r.dir, r.gw, r.rep, strings.SplitN(r.err, "\n", 2)[0])
		}
	}
	for _, nb := range nbs {
		neighbourTable(&b, nb)
	}
	if len(nbs) > 1 {
		neighbourSummary(&b, nbs)
	}
	return b.String()
}

// libTable writes item 6's table: a row per library and direction.
func libTable(b *strings.Builder, runs []reachedRun, repeat int, libs []string) {
	fmt.Fprintf(b, "Quotas reached (issue 22.6): the seed's quotas (client producer_byte_rate 1 MiB/s, consumer_byte_rate 2 MiB/s;\n")
	fmt.Fprintf(b, "tenant producer_byte_rate 2 MiB/s; window 1 s; max_throttle 5 s), one key of tenant acme, each library with its\n")
	fmt.Fprintf(b, "defaults, 1 KiB records of incompressible bytes, flat out, a topic of 3 partitions. Median of %d runs (min–max).\n", repeat)
	fmt.Fprintf(b, "MiB/s: seconds 4 to 14 of the run's first byte (producers: the topic's end offsets at the broker every 100 ms;\n")
	fmt.Fprintf(b, "consumers: the records as the client hands them over). First second: MiB in the first second of the run's first\n")
	fmt.Fprintf(b, "byte. p99: a request's latency while held (seconds 4-14): franz-go, each Produce or Fetch from its write to its\n")
	fmt.Fprintf(b, "answer (kgo.HookBrokerE2E); confluent-kafka, librdkafka's rtt p99 of each 1 s statistics window, the highest\n")
	fmt.Fprintf(b, "(‡: some windows' rtt past the 500 ms its histogram holds, where it reads 0: those windows' rtt max);\n")
	fmt.Fprintf(b, "perf-test's producer (†): its own p99 of a record over the whole run, its time in the producer's buffer included;\n")
	fmt.Fprintf(b, "–: the tool gives none. CPU s/GiB: the gateway process's threads' run time (schedstat) per GiB of the run's\n")
	fmt.Fprintf(b, "records, with the seed's quotas and through a second gateway without quotas, the same client in the same run.\n\n")
	fmt.Fprintln(b, "| client | direction | configured | MiB/s, s 4–14 | held ±15 % | first second MiB | p99 ms while held | CPU s/GiB, quotas reached | CPU s/GiB, no quotas | CPU ratio |")
	fmt.Fprintln(b, "| --- | --- | --: | --: | :-: | --: | --: | --: | --: | --: |")
	pick := func(lib, dir, gw string, f func(reachedRun) float64) []float64 {
		var v []float64
		for _, r := range runs {
			if r.lib == lib && r.dir == dir && r.gw == gw && r.err == "" {
				if x := f(r); !math.IsNaN(x) {
					v = append(v, x)
				}
			}
		}
		return v
	}
	for _, lib := range libs {
		for _, dir := range []string{"produce", "consume"} {
			conf := float64(seedProduceRate)
			if dir == "consume" {
				conf = seedConsumeRate
			}
			rate := pick(lib, dir, rOn, func(r reachedRun) float64 { return r.rate / (1 << 20) })
			first := pick(lib, dir, rOn, func(r reachedRun) float64 { return r.first / (1 << 20) })
			p99 := pick(lib, dir, rOn, func(r reachedRun) float64 { return r.p99 })
			cOn := pick(lib, dir, rOn, reachedRun.cpuPerGiB)
			cOff := pick(lib, dir, rOff, reachedRun.cpuPerGiB)
			held := "–"
			if len(rate) > 0 {
				held = "**no**"
				if m := median(rate); math.Abs(m-conf/(1<<20)) <= 0.15*conf/(1<<20) {
					held = "yes"
				}
			}
			p := spreadMS(p99)
			if lib == "perf-test" && dir == "produce" && len(p99) > 0 {
				p += " †"
			}
			for _, r := range runs {
				if r.lib == lib && r.dir == dir && r.gw == rOn && r.rttOver {
					p += " ‡"
					break
				}
			}
			ratio := "–"
			if len(cOn) > 0 && len(cOff) > 0 {
				ratio = fmt.Sprintf("%.2f", median(cOn)/median(cOff))
			}
			fmt.Fprintf(b, "| %s | %s | %.0f MiB/s | %s | %s | %s | %s | %s | %s | %s |\n", lib, dir, conf/(1<<20),
				spread(rate, "%.3f"), held, spread(first, "%.2f"), p, spread(cOn, "%.2f"), spread(cOff, "%.3f"), ratio)
		}
	}
	fmt.Fprintln(b)
}

// neighbourTable writes item 7's table of one gateway.
func neighbourTable(b *strings.Builder, nb *neighbourResult) {
	switch {
	case nb.pace != nil:
		if nb.gw == relay {
			fmt.Fprintf(b, "\nThe relay's floor: the same through the splice relay (bench/cmd/splicerelay: splice(2), a connection per connection)\n")
			fmt.Fprintf(b, "instead of the gateway, acme paced at the held rates. Every client to the broker's RELAY listener (SASL PLAIN as the\n")
			fmt.Fprintf(b, "broker's user, the broker's topics globex.quota and acme.quota): tenant globex's producer at\n")
		} else {
			fmt.Fprintf(b, "\nThe floor: the same without the gateway, acme paced at the held rates. Every client direct to the broker's\n")
			fmt.Fprintf(b, "PLAINTEXT listener (no SASL, the broker's topics globex.quota and acme.quota): tenant globex's producer at\n")
		}
		fmt.Fprintf(b, "%d records/s of 1 KiB (%.2f MiB/s) with franz-go's defaults; from second %.0f acme's %d producers at %.3f MiB/s in all\n",
			nb.rate, float64(nb.rate)/1024, neighbourAStart.Seconds(), nb.acme, nb.pace.produce)
		shape := "evenly spaced, linger 0"
		if nb.pace.burst > 1 {
			shape = fmt.Sprintf("in lumps of %d records sent at once", nb.pace.burst)
		}
		fmt.Fprintf(b, "(%.1f records/s each, %s) and its %d consumers at %.3f MiB/s each (records handed over, at most\n",
			nb.pace.produce*1024/float64(max(1, nb.acme)), shape, nb.acme, nb.pace.consume)
		fmt.Fprintf(b, "50 ms of the rate per poll; franz-go's default fetch sizes). What acme's held load costs globex at the broker and\n")
		fmt.Fprintf(b, "on the machine, with no gateway in the path. Windows in seconds of globex's start. p99 record: a record's\n")
	default:
		if nb.gw == rOn {
			fmt.Fprintf(b, "\nA noisy neighbour (issue 22.7), the gateway with the seed's quotas, one run: tenant globex (one key) produces\n")
		} else {
			fmt.Fprintf(b, "\nThe same through the gateway without quotas (%s), the contrast (acme unheld): tenant globex (one key) produces\n", nb.gw)
		}
		fmt.Fprintf(b, "%d records/s of 1 KiB (%.2f MiB/s, under its key's 1 MiB/s) with franz-go's defaults; from second %.0f tenant acme's\n",
			nb.rate, float64(nb.rate)/1024, neighbourAStart.Seconds())
		fmt.Fprintf(b, "three keys each produce and consume flat out (with the quotas: acme held by its tenant producer_byte_rate 2 MiB/s\n")
		fmt.Fprintf(b, "together and each key's consumer_byte_rate 2 MiB/s). Windows in seconds of globex's start. p99 record: a record's\n")
	}
	fmt.Fprintf(b, "latency from Produce to its acknowledgement; p99 Produce: the request's (kgo.HookBrokerE2E). ratios: beside acme /\n")
	fmt.Fprintf(b, "alone before it, and / alone after it.\n\n")
	fmt.Fprint(b, "| globex |")
	for _, w := range nb.win {
		fmt.Fprintf(b, " %s (s %.0f–%.0f) |", w.name, w.from, w.to)
	}
	fmt.Fprintln(b, " ratio to before | ratio to after |")
	fmt.Fprintln(b, "| --- |"+strings.Repeat(" --: |", len(nb.win)+2))
	row := func(name string, f func(nbWindow) float64, cell func(float64) string) float64 {
		fmt.Fprintf(b, "| %s |", name)
		for _, w := range nb.win {
			fmt.Fprintf(b, " %s |", cell(f(w)))
		}
		r, ra := nan, nan
		if len(nb.win) >= 2 {
			r = f(nb.win[1]) / f(nb.win[0])
		}
		if len(nb.win) >= 3 {
			ra = f(nb.win[1]) / f(nb.win[2])
		}
		fmt.Fprintf(b, " %.3f | %.3f |\n", r, ra)
		return r
	}
	mib := func(v float64) string { return fmt.Sprintf("%.3f", v) }
	row("records acknowledged", func(w nbWindow) float64 { return float64(w.n) }, func(v float64) string { return fmt.Sprintf("%.0f", v) })
	thr := row("throughput MiB/s", func(w nbWindow) float64 { return w.mib }, mib)
	row("p50 record ms", func(w nbWindow) float64 { return w.p50 }, fmtMS)
	p99 := row("p99 record ms", func(w nbWindow) float64 { return w.p99 }, fmtMS)
	row("p99 Produce request ms", func(w nbWindow) float64 { return w.req }, fmtMS)
	fmt.Fprintf(b, "\n- acme beside it (its run past its first second): produced %.2f MiB/s (the broker's offsets), read %.2f MiB/s.\n", nb.aProduce, nb.aConsume)
	moved := math.Abs(p99 - 1)
	if nb.pace != nil {
		fmt.Fprintf(b, "- paced at %.2f MiB/s produced in all, %.2f MiB/s read in all (%.2f each).\n", nb.pace.produce, nb.pace.consume*float64(nb.acme), nb.pace.consume)
	}
	if nb.gw == rOn && nb.pace == nil {
		fmt.Fprintf(b, "- globex's p99 moved by %.1f %% (item 7: under 10 %%: %s); its throughput by %.1f %%.\n", 100*moved,
			map[bool]string{true: "yes", false: "**no**"}[moved < 0.10], 100*math.Abs(thr-1))
	} else {
		fmt.Fprintf(b, "- globex's p99 moved by %.1f %%; its throughput by %.1f %%.\n", 100*moved, 100*math.Abs(thr-1))
	}
	if nb.err != "" {
		fmt.Fprintf(b, "- Errors: %s\n", nb.err)
	}
}

// nbPassName names a pass of the neighbour in the summary.
func nbPassName(nb *neighbourResult) string {
	switch {
	case nb.pace != nil && nb.gw == relay:
		return fmt.Sprintf("through the splice relay, acme at the held rates in lumps of %d records", nb.pace.burst)
	case nb.pace != nil && nb.pace.burst > 1:
		return fmt.Sprintf("direct, acme at the held rates in lumps of %d records", nb.pace.burst)
	case nb.pace != nil:
		return "direct, acme paced at the held rates"
	case nb.gw == rOn:
		return "through " + rOn + " (acme held)"
	case nb.gw == rOff:
		return "through " + rOff + " (acme unheld)"
	}
	return "through " + nb.gw
}

// neighbourSummary writes globex's figures of every pass side by side, and
// how much of the move through the seed-quotas gateway the floor (no
// gateway, acme paced at the held rates) accounts for.
func neighbourSummary(b *strings.Builder, nbs []*neighbourResult) {
	fmt.Fprintf(b, "\nThe noisy neighbour, every pass (globex's windows as above: alone before acme, beside it, alone after it):\n\n")
	fmt.Fprintln(b, "| globex, by pass | acme produced MiB/s | acme read MiB/s | MiB/s before | MiB/s beside | MiB/s after | p99 record ms before | p99 beside | p99 after | p99 ratio to before | p99 ratio to after | p99 Produce ms before | p99 Produce beside |")
	fmt.Fprintln(b, "| --- |"+strings.Repeat(" --: |", 12))
	ratio := func(nb *neighbourResult, i int) float64 {
		if len(nb.win) < 3 {
			return nan
		}
		return nb.win[1].p99 / nb.win[i].p99
	}
	var on, floor, lumps, relayed *neighbourResult
	for _, nb := range nbs {
		w := func(i int, f func(nbWindow) float64, cell func(float64) string) string {
			if i >= len(nb.win) {
				return "–"
			}
			return cell(f(nb.win[i]))
		}
		mib := func(w nbWindow) float64 { return w.mib }
		p99 := func(w nbWindow) float64 { return w.p99 }
		req := func(w nbWindow) float64 { return w.req }
		f3 := func(v float64) string { return fmt.Sprintf("%.3f", v) }
		fmt.Fprintf(b, "| %s | %.2f | %.2f | %s | %s | %s | %s | %s | %s | %.3f | %.3f | %s | %s |\n", nbPassName(nb), nb.aProduce, nb.aConsume,
			w(0, mib, f3), w(1, mib, f3), w(2, mib, f3), w(0, p99, fmtMS), w(1, p99, fmtMS), w(2, p99, fmtMS),
			ratio(nb, 0), ratio(nb, 2), w(0, req, fmtMS), w(1, req, fmtMS))
		switch {
		case nb.pace != nil && nb.gw == relay:
			relayed = nb
		case nb.pace != nil && nb.pace.burst > 1:
			lumps = nb
		case nb.pace != nil:
			floor = nb
		case nb.gw == rOn:
			on = nb
		}
	}
	fmt.Fprintln(b)
	if on == nil || floor == nil {
		return
	}
	rOnR, rFloor := ratio(on, 0), ratio(floor, 0)
	if math.IsNaN(rOnR) || math.IsNaN(rFloor) {
		return
	}
	fmt.Fprintf(b, "- globex's p99 beside acme / alone before it: %.3f direct with acme paced at the held rates (the floor), %.3f through %s.\n",
		rFloor, rOnR, rOn)
	if lumps != nil {
		if rLumps := ratio(lumps, 0); !math.IsNaN(rLumps) {
			fmt.Fprintf(b, "- The floor of the same shape (direct, acme at the held rates in lumps of %d records, as a held producer sends what it\n", lumps.pace.burst)
			fmt.Fprintf(b, "  batched during a mute): %.3f. Past it, the gateway adds %+.1f %% of p99 (%.2f ms beside acme).\n",
				rLumps, 100*(rOnR-rLumps), on.win[1].p99-lumps.win[1].p99)
		}
	}
	if relayed != nil {
		if rRelay := ratio(relayed, 0); !math.IsNaN(rRelay) {
			fmt.Fprintf(b, "- The relay's floor (the same lumps through the splice relay, a kernel-only hop): %.3f (%.2f → %.2f ms). Past it, the gateway\n",
				rRelay, relayed.win[0].p99, relayed.win[1].p99)
			fmt.Fprintf(b, "  adds %+.1f %% of p99 (%.2f ms beside acme; alone before acme, the gateway's p99 is %.2f ms, the relay's %.2f).\n",
				100*(rOnR-rRelay), on.win[1].p99-relayed.win[1].p99, on.win[0].p99, relayed.win[0].p99)
		}
	}
	switch {
	case rOnR-1 <= 0.01:
	case rFloor >= rOnR:
		fmt.Fprintf(b, "- The floor moves it as much as the gateway does, or more: past the floor, the gateway adds nothing measured here.\n")
	default:
		share := max(0, (rFloor-1)/(rOnR-1))
		fmt.Fprintf(b, "- Of the move through %s (%+.1f %%), the floor accounts for %.0f %% (%+.1f %%); the rest, %.2f ms of p99 beside acme, comes\n",
			rOn, 100*(rOnR-1), 100*share, 100*(rFloor-1), on.win[1].p99-floor.win[1].p99)
		fmt.Fprintf(b, "  with the gateway: its path, and the shape of acme's load through it (a Produce of up to 1 MB a partition at each unmute,\n")
		fmt.Fprintf(b, "  Fetches cut to the allowance) against the floor's evenly paced records.\n")
	}
}
