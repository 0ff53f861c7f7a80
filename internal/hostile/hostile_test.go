package hostile

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

var full = flag.Bool("hostile.full", os.Getenv("HOSTILE_FULL") == "1",
	"run every attack at full size (make hostile); else the quick subset")

// notef logs a note of the attack under way (its test's Logf).
var notef = func(string, ...any) {}

// attack is one kind of attack and its bound.
type attack struct {
	name string
	// quick: in the default (short) run, at the size run gives it then.
	quick bool
	// established: the canary is a globex authenticated before the attack
	// (the seed's max_unauthenticated_connections refuses new connections
	// while an anonymous flood fills its places; authenticated clients are
	// never touched).
	established bool
	// bound says, for the table, what must hold beyond the common bounds.
	bound string
	// rssPeak bounds the RSS growth at peak; 0 is defaultRSSPeak.
	rssPeak int64
	// rssBack, when not 0: RSS back within rssBack of before (or of idle,
	// runAttack), within 10 s of the attack's end.
	rssBack int64
	// logMax bounds the bytes logged (stdout, stderr, the audit among
	// them); 0 is defaultLogMax.
	logMax int64
	// run attacks; it returns once its connections are closed, with what
	// went against the bound (nil: held).
	run func(g *gateway, full bool) error
}

const (
	// defaultRSSPeak: the fixed margin the issue allows beyond a budget,
	// here for an attack that should hold next to nothing.
	defaultRSSPeak = 48 * mib
	defaultLogMax  = 1 * mib
	// settleWithin: descriptors and goroutines back within it.
	settleWithin = 30 * time.Second
	// rssBackWithin: the "back within 10 s".
	rssBackWithin = 10 * time.Second
	// rssIdleSlack: RSS this far above the suite's idle is "back".
	rssIdleSlack = 16 * mib
)

// waitRSS waits until the gateway's RSS is at most limit, at most within
// (the memory an attack before left, given back).
func waitRSS(g *gateway, limit int64, within time.Duration) {
	deadline := time.Now().Add(within)
	for rss(g.pid()) > limit && time.Now().Before(deadline) && g.alive() {
		time.Sleep(250 * time.Millisecond)
	}
}

// attacks is the suite, in the order it runs. The heavy ones (partial
// frames, admin and login floods) run last: their leftovers cannot spoil
// another's figures.
func attacks() []attack {
	return []attack{
		{name: "framing", quick: true, run: framing,
			bound: "bad sizes, garbage, TLS on plaintext: each closed within 10 s"},
		{name: "slow-bytes", run: slowBytes,
			bound: "1 B/100 ms before auth: closed by auth_timeout 10 s (+10 s); after auth: answered"},
		{name: "resets", quick: true, run: resets,
			bound: "half-closes and resets mid-request: each closed within 10 s"},
		{name: "unauth-flood", quick: true, run: unauthFlood,
			bound: "600 unauthenticated from 1 address: 16 held (per address), closed by auth_timeout (+10 s), globex gets in"},
		{name: "unauth-40-addr", run: unauthFloodMany, established: true,
			bound: "600 unauthenticated from 40 addresses: 256 held (the seed's places), closed by auth_timeout (+10 s), an authenticated globex served"},
		{name: "tenant-names", quick: true, run: tenantNames,
			bound: "acme's Metadata, Fetch, Produce never name globex"},
		{name: "unread-fetch", run: unreadFetches, rssPeak: 32*mib + 48*mib,
			bound: "4 x 50 MiB fetches unread: RSS +32 MiB (tenant) +48 MiB"},
		{name: "pipeline", quick: true, run: pipelines, rssPeak: 8*mib + 48*mib,
			bound: "requests unread: RSS +8 MiB (connection) +48 MiB; all answered in order"},
		{name: "broken-reload", quick: true, run: brokenReloads,
			bound: "SIGHUP on broken flexway.yaml: refused, the old configuration serves"},
		{name: "partial-16MiB", run: partialFrames(16*mib, 15*mib), rssPeak: 32*mib + 48*mib, rssBack: 16 * mib,
			bound: "24 x 15 of 16 MiB: RSS +32 MiB +48 MiB, back (+16 MiB) within 10 s"},
		{name: "partial-7MiB", run: partialFrames(7*mib, 6*mib), rssPeak: 32*mib + 48*mib, rssBack: 16 * mib,
			bound: "24 x 6 of 7 MiB: RSS +32 MiB +48 MiB, back (+16 MiB) within 10 s"},
		{name: "admin-flood", run: adminFlood,
			bound: "1,100 idle admin keep-alives, fd limit 1,024: Kafka serves, extra closed"},
		{name: "login-flood", run: loginFlood,
			bound: "2,000 refused PLAIN, 60 KiB names: log+audit <= 1 MiB, all counted; one address slowed, its right key at once"},
	}
}

// TestHostile runs the attacks against the built binary, one after the
// other on one gateway, and prints each one's figures. By default the quick
// subset; with -hostile.full (make hostile) all of them, full size.
func TestHostile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc and dials from 127.0.0.2 and up: Linux only")
	}
	bin := buildFlexway(t)
	g := startGateway(t, bin)
	if err := (&canary{g: g}).round(0); err != nil { // served once: what any first client sets up
		t.Fatal(err)
	}
	idle := rss(g.pid())
	var rows []row
	failed := false
	for _, a := range attacks() {
		if !*full && !a.quick {
			continue
		}
		r := runAttack(t, g, a, idle)
		rows = append(rows, r)
		if r.verdict != "PASS" {
			failed = true
		}
		if !g.alive() {
			t.Errorf("the gateway died during %s", a.name)
			break
		}
	}
	fmt.Fprintf(os.Stderr, "\n%s", table(rows)) // make hostile's table, also without -v
	if failed {
		t.Fail()
	}
}

// runAttack runs a between its measures and judges it; its failures are
// logged (t.Errorf) and its verdict put in the row. RSS is judged from the
// lower of the attack's start and idle + rssIdleSlack: an attack after one
// that left the gateway's memory high (not back yet) is judged from idle,
// else the memory left would hide its own.
func runAttack(t *testing.T, g *gateway, a attack, idle int64) row {
	t.Helper()
	r := row{name: a.name, bound: a.bound}
	notef = t.Logf
	waitRSS(g, idle+rssIdleSlack, 30*time.Second)
	before, _ := settled(g, readSample(g, true), 0, 0, &sampler{})
	r.f.before = before
	ref := before
	ref.rss = min(before.rss, idle+rssIdleSlack)
	logFrom := g.out.Bytes()
	var errs []string
	c, err := startCanary(g, a.established)
	if err != nil {
		errs = append(errs, err.Error())
	}
	s := startSampler(g, before)
	start := time.Now()
	if err := a.run(g, *full); err != nil {
		errs = append(errs, err.Error())
	}
	took := time.Since(start)
	if c != nil {
		c.attackOver()
		if err := c.end(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	rssBack := a.rssBack
	within := settleWithin
	if rssBack > 0 {
		within = rssBackWithin
	}
	after, ok := settled(g, ref, rssBack, within, s)
	r.f.peak = s.end()
	r.f.after = after
	r.f.logBytes = g.out.Bytes() - logFrom
	if !ok {
		errs = append(errs, fmt.Sprintf("not back within %v: %+v, from %+v", within, after, ref))
	}
	errs = append(errs, judge(a, r.f, ref.rss)...)
	if !g.alive() {
		errs = append(errs, "the gateway exited")
	}
	r.verdict = "PASS"
	if len(errs) > 0 {
		r.verdict = "FAIL"
		t.Errorf("%s (%v): %s", a.name, took.Round(time.Millisecond), strings.Join(errs, "; "))
	} else {
		t.Logf("%s: held (%v)", a.name, took.Round(time.Millisecond))
	}
	return r
}

// judge checks the figures against a's bounds, RSS growth counted from ref.
func judge(a attack, f figures, ref int64) []string {
	var errs []string
	peak := a.rssPeak
	if peak == 0 {
		peak = defaultRSSPeak
	}
	if f.peak.rss-ref > peak {
		errs = append(errs, fmt.Sprintf("RSS grew by %s MiB, bound %s MiB", mibs(f.peak.rss-ref), mibs(peak)))
	}
	logMax := a.logMax
	if logMax == 0 {
		logMax = defaultLogMax
	}
	if f.logBytes > logMax {
		errs = append(errs, fmt.Sprintf("%d bytes of log, bound %d", f.logBytes, logMax))
	}
	return errs
}
