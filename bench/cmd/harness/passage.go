package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A request's passage through one relaying process (BENCH_PASSAGE=1,
// issue 35.2), for each fixed-rate run of a relaying path: its system
// calls that move bytes (read, readv, recvfrom, write, writev, sendmsg,
// splice) traced by perf record for the run's whole length, and its
// busiest connection pair (the client socket that sent it most, the broker
// socket it wrote most) read off ss during the run. Per request of that
// pair: from its last byte in to its last byte out (what the path adds),
// from its last byte out to the answer's first byte in (the broker's
// window), from the answer's first byte in to its write to the client. A
// pair with one request in flight (franz-go acks=1) splits exactly; with
// several, only a request alone on the wire is counted (one whose next
// came before its answer is not).
// A franz-go run's producer writes each Produce request's round trip as
// it sees it (loadgen -e2e, <run>-e2e.txt, every path, direct too): set
// against the trace (perf's clock is CLOCK_MONOTONIC, as loadgen's), a
// request's round trip less the broker's window is what the path cost it
// both ways, the processes' wake-ups and loopback included. Written to
// metrics/<run>-passage.txt (the trace kept beside it, .data) and a line
// of passage.tsv.

// passageCalls are the system calls that move a socket's bytes.
var passageCalls = []string{"read", "readv", "recvfrom", "write", "writev", "sendmsg", "splice"}

// passage is one run's trace and its pair's sockets.
type passage struct {
	cmd      *exec.Cmd
	data     string
	pid      int
	stopPair chan struct{}
	pairDone chan struct{}
	mu       sync.Mutex
	client   int // the busiest client-facing fd seen, -1 none
	broker   int // the busiest broker-facing fd seen, -1 none
}

// passageSplit is a run's per-request times, in ms; reqs are the
// requests' last byte out and answer's first byte in, in seconds of
// CLOCK_MONOTONIC.
type passageSplit struct {
	added, broker, answer []float64
	reqs                  [][2]float64
	trips, path           []float64 // the client's round trips; less the broker's window, where matched
}

// startPassage attaches perf record to pid's byte-moving calls; nil when
// BENCH_PASSAGE is not 1, pid is 0, the run is not at a fixed rate, or
// perf cannot be started.
func (h *harness) startPassage(pid int, scenario, path string, rep int) *passage {
	if !h.passage || pid == 0 || !strings.Contains(scenario, "fixed") {
		return nil
	}
	data := h.runFile(scenario, path, rep, "-passage.data")
	if data == "" {
		return nil
	}
	var ev []string
	for _, c := range passageCalls {
		ev = append(ev, "syscalls:sys_enter_"+c, "syscalls:sys_exit_"+c)
	}
	cmd := exec.Command("perf", "record", "-q", "-m", "4M", "-k", "CLOCK_MONOTONIC", "-e", strings.Join(ev, ","), "-p", strconv.Itoa(pid), "-o", data)
	cmd.SysProcAttr = dieWith(syscall.SIGKILL)
	if err := cmd.Start(); err != nil {
		return nil
	}
	time.Sleep(200 * time.Millisecond) // attached before the run begins
	p := &passage{cmd: cmd, data: data, pid: pid, stopPair: make(chan struct{}), pairDone: make(chan struct{}), client: -1, broker: -1}
	go p.watchPair()
	return p
}

// watchPair reads pid's sockets off ss every 500 ms while the run lasts
// and keeps its busiest pair: accepted sockets (their local port one pid
// listens on) by bytes received, the others by bytes acked.
func (p *passage) watchPair() {
	defer close(p.pairDone)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.stopPair:
			return
		case <-tick.C:
		}
		if c, b := busiestPair(p.pid); c >= 0 && b >= 0 {
			p.mu.Lock()
			p.client, p.broker = c, b
			p.mu.Unlock()
		}
	}
}

var (
	ssOwner = regexp.MustCompile(`pid=(\d+),fd=(\d+)`)
	ssRecv  = regexp.MustCompile(`bytes_received:(\d+)`)
	ssAcked = regexp.MustCompile(`bytes_acked:(\d+)`)
)

// busiestPair is pid's client socket that received most and its dialed
// socket that sent most, by fd; -1 when ss cannot tell.
func busiestPair(pid int) (client, broker int) {
	client, broker = -1, -1
	listen, err := exec.Command("ss", "-tlnpH").Output()
	if err != nil {
		return
	}
	own := map[string]bool{} // the ports pid listens on
	for _, l := range strings.Split(string(listen), "\n") {
		if f := strings.Fields(l); len(f) >= 4 && ownedBy(l, pid) {
			own[f[3][strings.LastIndexByte(f[3], ':')+1:]] = true
		}
	}
	out, err := exec.Command("ss", "-tnpiH", "state", "established").Output()
	if err != nil {
		return
	}
	lines := strings.Split(string(out), "\n")
	var bestC, bestB int64
	for i := 0; i+1 < len(lines); i++ {
		l := lines[i]
		m := ssOwner.FindAllStringSubmatch(l, -1)
		f := strings.Fields(l)
		if len(m) == 0 || len(f) < 4 {
			continue
		}
		fd := -1
		for _, o := range m {
			if o[1] == strconv.Itoa(pid) {
				fd, _ = strconv.Atoi(o[2])
			}
		}
		if fd < 0 {
			continue
		}
		local := f[2][strings.LastIndexByte(f[2], ':')+1:]
		info := lines[i+1]
		if own[local] {
			if n := ssCount(ssRecv, info); n > bestC {
				bestC, client = n, fd
			}
		} else if n := ssCount(ssAcked, info); n > bestB {
			bestB, broker = n, fd
		}
	}
	return
}

func ownedBy(line string, pid int) bool {
	for _, o := range ssOwner.FindAllStringSubmatch(line, -1) {
		if o[1] == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}

func ssCount(re *regexp.Regexp, s string) int64 {
	m := re.FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// stop detaches, splits the trace and writes it; the split is empty when
// the pair or the trace is missing.
func (p *passage) stop() passageSplit {
	if p == nil {
		return passageSplit{}
	}
	close(p.stopPair)
	<-p.pairDone
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	_ = p.cmd.Wait()
	p.mu.Lock()
	c, b := p.client, p.broker
	p.mu.Unlock()
	if c < 0 || b < 0 {
		return passageSplit{}
	}
	cmd := exec.Command("perf", "script", "-i", p.data)
	out, err := cmd.StdoutPipe()
	if err != nil || cmd.Start() != nil {
		return passageSplit{}
	}
	s := split(moves(bufio.NewScanner(out), c, b))
	_ = cmd.Wait()
	return s
}

// A move is one call's bytes on the pair: in from the client or the
// broker, out to either.
type move struct {
	at   float64 // seconds
	kind byte    // 'c' in from the client, 'b' in from the broker, 'C' out to the client, 'B' out to the broker
}

var perfCall = regexp.MustCompile(`^\s*\S+\s+(\d+)\s+\[\d+\]\s+([\d.]+):\s+syscalls:sys_(enter|exit)_(\w+):\s*(.*)$`)
var perfCallArg = regexp.MustCompile(`(\w+): (0x[0-9a-f]+)`)

// moves reads perf script's lines: each call that moved bytes on the
// pair (client fd c, broker fd b), or peeked at them (MSG_PEEK).
func moves(sc *bufio.Scanner, c, b int) []move {
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	type call struct {
		name string
		args map[string]int64
	}
	pend := map[string]call{}
	var evs []move
	for sc.Scan() {
		m := perfCall.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		tid, name, rest := m[1], m[4], m[5]
		if m[3] == "enter" {
			a := map[string]int64{}
			for _, kv := range perfCallArg.FindAllStringSubmatch(rest, -1) {
				v, _ := strconv.ParseInt(kv[2], 0, 64)
				a[kv[1]] = v
			}
			pend[tid] = call{name, a}
			continue
		}
		e, ok := pend[tid]
		delete(pend, tid)
		if !ok || e.name != name {
			continue
		}
		ret, err := strconv.ParseUint(strings.TrimSpace(rest), 0, 64)
		if err != nil || int64(ret) <= 0 {
			continue
		}
		at, _ := strconv.ParseFloat(m[2], 64)
		if k := moveKind(name, e.args, int64(c), int64(b)); k != 0 {
			evs = append(evs, move{at, k})
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	return evs
}

func moveKind(name string, a map[string]int64, c, b int64) byte {
	side := func(fd int64, fromC, fromB byte) byte {
		switch fd {
		case c:
			return fromC
		case b:
			return fromB
		}
		return 0
	}
	switch name {
	case "read", "readv":
		return side(a["fd"], 'c', 'b')
	case "recvfrom": // a peek (MSG_PEEK) too: the bytes are in the process's hands
		return side(a["fd"], 'c', 'b')
	case "write", "writev", "sendmsg":
		return side(a["fd"], 'C', 'B')
	case "splice":
		if k := side(a["fd_in"], 'c', 'b'); k != 0 {
			return k
		}
		return side(a["fd_out"], 'C', 'B')
	}
	return 0
}

// split walks the moves: a request is the client's bytes up to the
// broker's answer; from the last move in before its last byte out to that
// byte is what the path added (the gateway writes a peeked partition's
// head, or a request's peeked tail, before it consumes it: a read after
// the last write is not an arrival), the answer's first byte in ends the
// broker's window, the answer's next write to the client its way back.
func split(evs []move) passageSplit {
	var s passageSplit
	var lastIn, inAtOut, lastOut, ansIn float64
	inAnswer := false
	for _, e := range evs {
		if !inAnswer {
			switch e.kind {
			case 'c':
				lastIn = e.at
			case 'B':
				lastOut, inAtOut = e.at, lastIn
			case 'b':
				if inAtOut > 0 {
					s.added = append(s.added, (lastOut-inAtOut)*1e3)
					s.broker = append(s.broker, (e.at-lastOut)*1e3)
					s.reqs = append(s.reqs, [2]float64{lastOut, e.at})
				}
				ansIn, inAnswer = e.at, true
				lastIn, inAtOut, lastOut = 0, 0, 0
			}
			continue
		}
		switch e.kind {
		case 'C':
			s.answer = append(s.answer, (e.at-ansIn)*1e3)
			inAnswer = false
		case 'c': // the next request before the answer went: pipelined
			lastIn, inAnswer = e.at, false
		}
	}
	return s
}

// e2eFile is the file a run's producer writes its round trips to
// (loadgen -e2e): a franz-go fixed-rate run with BENCH_PASSAGE=1; "" else.
func (h *harness) e2eFile(scenario, path string, rep int) string {
	if !h.passage || !strings.Contains(scenario, "fixed") || !strings.HasPrefix(scenario, "franz-go") {
		return ""
	}
	return h.runFile(scenario, path, rep, "-e2e.txt")
}

// roundTrips reads the producer's round trips and sets each against the
// trace's last request whose answer came in before the trip's end: the
// trip less that request's broker window is the path's (one request in
// flight: the one before was answered before this trip began). The hook
// runs a moment after the read, so a trip's times are late by it: a
// request out up to a trip before is taken, one whose window exceeds the
// trip is not.
func (s *passageSplit) roundTrips(file string) {
	data, err := os.ReadFile(file)
	if file == "" || err != nil {
		return
	}
	for _, line := range strings.Split(string(data), "\n") {
		var at, trip int64
		if _, err := fmt.Sscan(line, &at, &trip); err != nil {
			continue
		}
		s.trips = append(s.trips, float64(trip)/1e6)
		from, to := float64(at)/1e9, float64(at+trip)/1e9
		i := sort.Search(len(s.reqs), func(i int) bool { return s.reqs[i][1] > to }) - 1
		if i < 0 || s.reqs[i][0] < from-(to-from) {
			continue
		}
		if p := float64(trip)/1e6 - (s.reqs[i][1]-s.reqs[i][0])*1e3; p >= 0 {
			s.path = append(s.path, p)
		}
	}
}

// text is the split's percentiles, a line each.
func (s passageSplit) text() string {
	var b strings.Builder
	for _, x := range []struct {
		name string
		v    []float64
	}{{"added: a request's last byte in to its last byte out", s.added},
		{"broker: a request's last byte out to its answer's first byte in", s.broker},
		{"answer: its first byte in to its write to the client", s.answer},
		{"trip: the client's round trip, its write's end to its answer read", s.trips},
		{"path: a trip less its broker window (matched by time)", s.path}} {
		fmt.Fprintf(&b, "%s: n %d, p50 %.3f ms, p90 %.3f, p99 %.3f, max %.3f\n", x.name, len(x.v),
			percentile(x.v, .5), percentile(x.v, .9), percentile(x.v, .99), percentile(x.v, 1))
	}
	return b.String()
}

// summary is the split's short form for the run's line; "" when empty.
func (s passageSplit) summary() string {
	out := ""
	if len(s.added) > 0 {
		out += fmt.Sprintf("; passage (%d requests) added p50 / p99 %.3f / %.3f ms, broker %.2f / %.2f ms, answer %.3f / %.3f ms",
			len(s.added), percentile(s.added, .5), percentile(s.added, .99), percentile(s.broker, .5), percentile(s.broker, .99),
			percentile(s.answer, .5), percentile(s.answer, .99))
	}
	if len(s.trips) > 0 {
		out += fmt.Sprintf("; client round trip p50 / p99 %.2f / %.2f ms", percentile(s.trips, .5), percentile(s.trips, .99))
	}
	if len(s.path) > 0 {
		out += fmt.Sprintf(", the path's share (%d matched) %.3f / %.3f ms", len(s.path), percentile(s.path, .5), percentile(s.path, .99))
	}
	return out
}

// recordPassage appends a run's split to passage.tsv in the results, and
// writes it whole beside its trace (a direct run: its round trips alone).
func (h *harness) recordPassage(scenario, path string, rep int, s passageSplit) {
	if len(s.added) == 0 && len(s.trips) == 0 {
		return
	}
	if f := h.runFile(scenario, path, rep, "-passage.txt"); f != "" {
		_ = os.WriteFile(f, []byte(s.text()), 0o644)
	}
	f := h.appendTSV("passage.tsv", "scenario\tpath\trun\trequests\tadded_p50_ms\tadded_p90_ms\tadded_p99_ms\tbroker_p50_ms\tbroker_p90_ms\tbroker_p99_ms\tanswer_p50_ms\tanswer_p99_ms\ttrips\ttrip_p50_ms\ttrip_p90_ms\ttrip_p99_ms\tmatched\tpath_p50_ms\tpath_p90_ms\tpath_p99_ms")
	if f == nil {
		return
	}
	defer f.Close()
	q := func(v []float64, p float64) string {
		if len(v) == 0 {
			return "-"
		}
		return strconv.FormatFloat(percentile(v, p), 'f', 3, 64)
	}
	fmt.Fprintf(f, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", scenario, path, rep, len(s.added),
		q(s.added, .5), q(s.added, .9), q(s.added, .99), q(s.broker, .5), q(s.broker, .9), q(s.broker, .99),
		q(s.answer, .5), q(s.answer, .99), len(s.trips), q(s.trips, .5), q(s.trips, .9), q(s.trips, .99),
		len(s.path), q(s.path, .5), q(s.path, .9), q(s.path, .99))
}
