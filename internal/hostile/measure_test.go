package hostile

// What is measured of the gateway, from outside as an operator would: its
// RSS (VmRSS of /proc/<pid>/status), its descriptors (/proc/<pid>/fd), its
// goroutines (go_goroutines at /metrics), the bytes it wrote.

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flexway/flexway/internal/testkit"
)

// sample is one reading; a field is -1 when it could not be read (the
// admin endpoint busy, for goroutines).
type sample struct {
	rss        int64 // bytes
	fds        int
	goroutines int
}

// readSample reads the gateway's figures now.
func readSample(g *gateway, scrape bool) sample {
	s := sample{rss: rss(g.pid()), fds: fds(g.pid()), goroutines: -1}
	if scrape {
		s.goroutines = goroutines(g.admin)
	}
	return s
}

// rss is VmRSS in bytes, -1 if unread.
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return n << 10
		}
	}
	return -1
}

// fds is the count of open descriptors, -1 if unread.
func fds(pid int) int {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(es)
}

// scraper reads /metrics on a connection of its own, without keep-alive:
// a connection held would be one of the admin flood's.
var scraper = http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// goroutines is go_goroutines at /metrics, -1 if the endpoint did not answer.
func goroutines(admin string) int {
	text, err := scrape(admin)
	if err != nil || !strings.Contains(text, "\ngo_goroutines ") {
		return -1
	}
	return int(testkit.SumSeries(text, "go_goroutines "))
}

// scrape reads /metrics.
func scrape(admin string) (string, error) {
	resp, err := scraper.Get("http://" + admin + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return "\n" + string(b), err
}

// figures are one attack's: before, at peak, after.
type figures struct {
	before, peak, after sample
	logBytes            int64
}

// sampler samples the gateway every 100 ms (goroutines every 500 ms) and
// keeps the peaks, until stop.
type sampler struct {
	mu   sync.Mutex
	peak sample
	stop chan struct{}
	done chan struct{}
}

func startSampler(g *gateway, from sample) *sampler {
	s := &sampler{peak: from, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 1; ; i++ {
			s.add(readSample(g, i%5 == 0))
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *sampler) add(x sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peak.rss = max(s.peak.rss, x.rss)
	s.peak.fds = max(s.peak.fds, x.fds)
	s.peak.goroutines = max(s.peak.goroutines, x.goroutines)
}

// end stops the sampling and returns the peaks.
func (s *sampler) end() sample {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// settled waits (at most within) until the gateway is back: descriptors
// and goroutines within slack of before, and RSS within rssBack of before
// when rssBack > 0. It returns the last reading and whether it settled.
func settled(g *gateway, before sample, rssBack int64, within time.Duration, s *sampler) (sample, bool) {
	deadline := time.Now().Add(within)
	for {
		now := readSample(g, true)
		s.add(now)
		ok := now.fds >= 0 && now.fds <= before.fds+fdSlack &&
			now.goroutines >= 0 && now.goroutines <= before.goroutines+goroutineSlack &&
			(rssBack <= 0 || now.rss <= before.rss+rssBack)
		if ok || time.Now().After(deadline) || !g.alive() {
			return now, ok
		}
		time.Sleep(250 * time.Millisecond)
	}
}

const (
	fdSlack        = 8  // the canary's and the scraper's connections come and go
	goroutineSlack = 16 // and the gateway's own workers
)

func mibs(b int64) string {
	if b < 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(b)/mib)
}

func count(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// row is one line of the table.
type row struct {
	name, bound, verdict string
	f                    figures
}

// table prints the rows.
func table(rows []row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s | %-19s | %-17s | %-17s | %-10s | %-4s | %s\n",
		"attack", "RSS MiB b/peak/a", "fds b/peak/a", "goroutines b/p/a", "log bytes", "", "bound")
	for _, r := range rows {
		f := r.f
		fmt.Fprintf(&b, "%-16s | %-19s | %-17s | %-17s | %-10d | %-4s | %s\n", r.name,
			mibs(f.before.rss)+"/"+mibs(f.peak.rss)+"/"+mibs(f.after.rss),
			count(f.before.fds)+"/"+count(f.peak.fds)+"/"+count(f.after.fds),
			count(f.before.goroutines)+"/"+count(f.peak.goroutines)+"/"+count(f.after.goroutines),
			f.logBytes, r.verdict, r.bound)
	}
	return b.String()
}
