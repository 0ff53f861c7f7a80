package hostile

// The floods: idle keep-alive connections to the admin endpoint, refused
// logins with long names.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// adminFlood: 1,100 keep-alive connections to /healthz, held idle, with the
// gateway at 1,024 descriptors. Meanwhile a new Kafka client produces and
// consumes within seconds (a canary round of its own), the gateway never
// reaches its descriptor limit (the Kafka port could not accept), and the
// admin connections beyond its bound are closed.
func adminFlood(g *gateway, _ bool) error {
	const n = 1100
	cs := make([]net.Conn, n)
	defer func() {
		for _, c := range cs {
			if c != nil {
				c.Close()
			}
		}
	}()
	var answered atomic.Int64
	sem := make(chan struct{}, 100)
	_ = parallel(n, func(i int) error {
		sem <- struct{}{}
		defer func() { <-sem }()
		c, err := net.DialTimeout("tcp", g.admin, 5*time.Second)
		if err != nil {
			return nil // refused: the bound, or the gateway out of descriptors; judged below
		}
		cs[i] = c
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: flexway\r\n\r\n")); err != nil {
			return nil
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil {
			resp.Body.Close()
			answered.Add(1)
		}
		return nil
	})
	peak := fds(g.pid())
	var errs []error
	if err := (&canary{g: g}).round(-1); err != nil {
		errs = append(errs, fmt.Errorf("a Kafka client during the flood: %w", err))
	}
	peak = max(peak, fds(g.pid()))
	closed := 0
	for _, c := range cs {
		if c == nil || isClosed(c) {
			closed++
		}
	}
	if peak >= fdLimit-16 {
		errs = append(errs, fmt.Errorf("the gateway at %d descriptors of %d (%d admin connections answered)", peak, fdLimit, answered.Load()))
	}
	if closed == 0 {
		errs = append(errs, fmt.Errorf("all %d idle admin connections held open", n))
	}
	return errors.Join(errs...)
}

// isClosed says whether the gateway closed c (a read meets EOF or a reset
// at once).
func isClosed(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	var b [1]byte
	_, err := c.Read(b[:])
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// loginFlood: 2,000 PLAIN logins with 60 KiB user names and a wrong key,
// from one address, 8 at a time (within its 16 connections), each refused
// with SASL_AUTHENTICATION_FAILED. The bound on the log is the attack's
// (logMax); here: every refusal answered so, and counted at /metrics. The
// rate reached is noted (failed logins cost the guesser time: item 33.4).
func loginFlood(g *gateway, _ bool) error {
	const n, workers = 2000, 8
	start := time.Now()
	name := strings.Repeat("u", 60<<10)
	before, err := scrape(g.admin)
	if err != nil {
		return err
	}
	var next atomic.Int64
	var mu sync.Mutex
	var bad []error
	_ = parallel(workers, func(int) error {
		// Each login from an address of its own (127.0.x.y): the write
		// bound alone, not the guesser's slow-down (guessSlowed).
		for i := next.Add(1); i <= n; i = next.Add(1) {
			if err := refusedLogin(g, floodAddr(int(i)), name); err != nil {
				mu.Lock()
				bad = append(bad, err)
				mu.Unlock()
			}
		}
		return nil
	})
	took := time.Since(start)
	notef("login-flood: %d refused logins from %d addresses in %v (%.0f a second)", n, n, took.Round(time.Millisecond), n/took.Seconds())
	if len(bad) > 0 {
		return fmt.Errorf("%d of %d logins not refused as they should: %w", len(bad), n, bad[0])
	}
	return errors.Join(refusalsCounted(g, before, n), guessSlowed(g))
}

// floodAddr is the i-th of the login flood's addresses: 127.1.x.y.
func floodAddr(i int) string { return fmt.Sprintf("127.1.%d.%d", i/250, 1+i%250) }

// guessSlowed: from one address, 12 wrong keys sent at once take their
// refusals over seconds (the delay that grows, issue 33.4), while the
// right key from the same address is answered at once.
func guessSlowed(g *gateway) error {
	from := attacker(attackers - 1)
	start := time.Now()
	var last atomic.Int64
	err := parallel(12, func(int) error {
		err := refusedLogin(g, from, "globex-app")
		last.Store(max(last.Load(), int64(time.Since(start))))
		return err
	})
	if err != nil {
		return err
	}
	r, err := dialFrom(from, g.kafka())
	if err != nil {
		return err
	}
	defer r.Close()
	good := time.Now()
	if code, err := r.plain("globex-app", g.keys["globex-app"]); err != nil || code != 0 {
		return fmt.Errorf("the right key from a guessing address: code %d, %v", code, err)
	}
	took := time.Since(good)
	notef("login-flood: 12 wrong keys from one address answered over %v, the right key in %v", time.Duration(last.Load()).Round(time.Millisecond), took.Round(time.Microsecond))
	switch {
	case time.Duration(last.Load()) < time.Second:
		return fmt.Errorf("12 wrong keys from one address all answered within %v: no slow-down", time.Duration(last.Load()))
	case took > time.Second:
		return fmt.Errorf("the right key from a guessing address answered after %v", took)
	}
	return nil
}

func refusedLogin(g *gateway, from, user string) error {
	r, err := dialFrom(from, g.kafka())
	if err != nil {
		return err
	}
	defer r.Close()
	code, err := r.plain(user, "not-the-key")
	if err != nil {
		return err
	}
	if code != kerr.SaslAuthenticationFailed.Code {
		return fmt.Errorf("code %d, want SASL_AUTHENTICATION_FAILED", code)
	}
	return nil
}

// refusedSeries are the series a refused login may be counted under.
var refusedSeries = []string{
	`flexway_kafka_requests_total{`,
	`flexway_kafka_connections_closed_total{`,
	`flexway_kafka_audit_records_total`,
}

// refusalsCounted: some series of /metrics grew by n or more since before,
// where the lines that name authentication are summed.
func refusalsCounted(g *gateway, before string, n int) error {
	after, err := scrape(g.admin)
	if err != nil {
		return err
	}
	var seen []string
	for _, prefix := range refusedSeries {
		d := authSum(after, prefix) - authSum(before, prefix)
		seen = append(seen, fmt.Sprintf("%s+%.0f", prefix, d))
		if d >= float64(n) {
			notef("login-flood: the refusals counted under %s (+%.0f)", prefix, d)
			return nil
		}
	}
	return fmt.Errorf("%d refusals not counted at /metrics: %s", n, strings.Join(seen, ", "))
}

// authSum sums the samples of the series under prefix whose labels speak
// of authentication (or all, for a series without labels).
func authSum(text, prefix string) float64 {
	var sum float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		if strings.HasSuffix(prefix, "{") && !bytes.Contains(bytes.ToLower([]byte(line)), []byte("auth")) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
			sum += v
		}
	}
	return sum
}
