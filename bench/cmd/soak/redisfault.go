// The soak's Redis outage (issue 25.2, Q3) and what the report checks of
// it: Redis killed with SIGKILL while the quotas and the day budget count,
// down for a while, started again on the same port and data; the gateway
// kept serving (events acknowledged meanwhile), its clients' errors within
// a bound of as long a time before, quota/counters' unreachable and
// reachable-again lines written once an outage (within the line a minute
// of their bound), and at the end the tenants' budget counters in Redis
// equal to the Produce requests the gateway admitted (Redis may hold more
// by the delta of a sync whose answer was lost, never less).
package main

import (
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// quota/counters' lines (redis.go, logState).
const (
	storeDown = "shared counter store unreachable"
	storeBack = "shared counter store reachable again"
)

// outage is what the soak saw of one Redis outage.
type outage struct {
	At, Up      time.Duration    // Redis killed at; listening again at
	Back        time.Duration    // the gateway's reachable-again line seen at; Up + 2 s when no line was due
	Slack       map[string]int64 // by tenant, the Produce requests admitted in the two syncs before the kill
	AckedDuring int              // events acknowledged from the kill to Back
}

// redisOutage reads what the gateway admitted two syncs apart (the slack of
// the budget check), kills Redis, waits f.For, starts it again on the same
// port and data, and waits for the gateway's reachable-again line (30 s at
// most) if it said Redis was unreachable, else two syncs.
func (sk *soak) redisOutage(f plannedFault) error {
	gw := sk.gateway()
	a0, err0 := gw.admitted(sk.tenants())
	time.Sleep(2 * time.Second) // two syncs (1 s each, the default): the slack's window
	a1, err1 := gw.admitted(sk.tenants())
	o := outage{Slack: map[string]int64{}}
	if err0 == nil && err1 == nil {
		for t := range a1 {
			o.Slack[t] = a1[t] - a0[t]
		}
	}
	logs := sk.s.gwLogs
	downs, backs, acked := countLines(logs, storeDown), countLines(logs, storeBack), sk.b.ackedCount()
	sk.mark(fmt.Sprintf("%s, for %v", faultRedis, f.For.Round(time.Second)))
	o.At = time.Since(sk.s.start)
	sk.redis.kill()
	time.Sleep(f.For) // the fault's length
	if err := sk.redis.restart(); err != nil {
		return err
	}
	o.Up = time.Since(sk.s.start)
	sk.mark("Redis listening again")
	if countLines(logs, storeDown) == downs {
		time.Sleep(2 * time.Second) // two syncs: no line due (one was written less than a minute before)
		o.Back = time.Since(sk.s.start)
		sk.mark("the gateway: no line on its store (one written less than a minute before)")
	}
	for deadline := time.Now().Add(30 * time.Second); o.Back == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if countLines(logs, storeBack) > backs {
			o.Back = time.Since(sk.s.start)
			sk.mark("the gateway: " + storeBack)
		}
	}
	o.AckedDuring = sk.b.ackedCount() - acked
	sk.outages = append(sk.outages, o)
	return nil
}

func (sk *soak) tenants() []string {
	var out []string
	for _, k := range sk.keys {
		out = append(out, k.tenant)
	}
	return out
}

// budgetEnd is the budget check at the run's end: the counters in Redis
// once the gateway has sent what it counted (it syncs every second; 15 s
// at most), and what it admitted since its start.
func (sk *soak) budgetEnd() (end budgets, admitted map[string]int64, err error) {
	gw, tenants := sk.gateway(), sk.tenants()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if admitted, err = gw.admitted(tenants); err != nil {
			return end, nil, err
		}
		if end, err = sk.redis.budgets(tenants); err != nil {
			return end, nil, err
		}
		synced := true
		for _, t := range tenants {
			synced = synced && end.Day[t]-sk.redisBase.Day[t] >= admitted[t]
		}
		if synced || time.Now().After(deadline) {
			return end, admitted, nil
		}
	}
}

// logText is the gateways' logs, one after the other.
func (sk *soak) logText() string {
	var b strings.Builder
	for _, p := range sk.s.gwLogs {
		if t, err := os.ReadFile(p); err == nil {
			b.Write(t)
		}
	}
	return b.String()
}

// redisSection writes the report's part on Redis; fail marks (and books)
// a check that failed.
func (sk *soak) redisSection(md *strings.Builder, fail func(bool) string) {
	text := sk.logText()
	downs, backs := lineTimes(text, storeDown, sk.s.start), lineTimes(text, storeBack, sk.s.start)
	fmt.Fprintf(md, "Redis (server.counters, %s, append-only, fsync on every write): killed %d times. The gateway's lines, "+
		"%q (a minute at most) and %q, once an outage.\n\n", sk.redis.url(), len(sk.outages), storeDown, storeBack)
	var lines []outageLines
	if len(sk.outages) > 0 {
		md.WriteString("| outage | down → back | lines: unreachable, back (the last unreachable before) | events acknowledged meanwhile " +
			"| client errors meanwhile | as long before | bound |\n|---|---|---|---|---|---|---|\n")
	}
	for i, o := range sk.outages {
		to, never := o.Back, ""
		if o.Back == 0 {
			to, never = o.Up+30*time.Second, " (never back)"
		}
		l := judgeLines(downs, backs, o.At, to)
		lines = append(lines, l)
		during := sk.b.errorsIn(o.At, to+time.Second)
		before := sk.b.errorsIn(o.At-(to-o.At)-time.Second, o.At)
		prev := "none"
		if l.SinceDown >= 0 {
			prev = fmt.Sprintf("%.0f s", l.SinceDown.Seconds())
		}
		fmt.Fprintf(md, "| %d | %.0f s → %.0f s%s | %d, %d (%s) %s | %d %s | %d %s | %d | 2 × %d + %d |\n", i+1, o.At.Seconds(),
			to.Seconds(), never, l.Down, l.Back, prev,
			fail(!l.ok() || o.Back == 0), o.AckedDuring, fail(o.AckedDuring == 0), during, fail(during > errorBound(before)),
			before, before, errorNoise)
	}
	stray := strays(downs, lines)
	fmt.Fprintf(md, "\nUnreachable lines outside the outages: %d (the store's 1 s timeout passed while Redis ran: "+
		"a loaded machine; each may count a sync twice).\n\n", stray)
	sk.budgetTable(md, fail, sk.budgetSlack(stray))
}

// budgetSlack is, by tenant, how many more Produce requests Redis may
// count than the gateway admitted: the delta of the sync in flight at each
// kill, and for each time-out of the store while Redis ran, 3 s (a sync
// and its timeout, and a margin) at the highest rate the samples saw.
func (sk *soak) budgetSlack(stray int) map[string]int64 {
	sk.samplesMu.Lock()
	peak := peakRate(slices.Clone(sk.samples), sk.tenants())
	sk.samplesMu.Unlock()
	slack := map[string]int64{}
	for _, o := range sk.outages {
		for t, n := range o.Slack {
			slack[t] += n
		}
	}
	for t, r := range peak {
		slack[t] += int64(stray) * int64(math.Ceil(3*r))
	}
	return slack
}

// budgetTable compares the tenants' counters in Redis with what the
// gateway admitted since its start (its metrics).
func (sk *soak) budgetTable(md *strings.Builder, fail func(bool) string, slack map[string]int64) {
	end, admitted, err := sk.budgetEnd()
	if err != nil {
		fmt.Fprintf(md, "Budget counters: cannot read them: %v %s\n\n", err, fail(true))
		return
	}
	last := sk.samplesLast()
	fmt.Fprintf(md, "Requests throttled by a quota: %.0f %s; refused for a quota: %.0f %s (the rates and the budget are far above the load).\n\n",
		last.Throttled, fail(last.Throttled > 0), last.QuotaRefuse, fail(last.QuotaRefuse > 0))
	md.WriteString("Budget counters in Redis (day; month) against the Produce requests the gateway admitted since its start: " +
		"Redis's count since then minus admitted must be 0, or up to the slack (a sync whose answer was lost, counted once more; DESIGN.md 22).\n\n" +
		"| tenant | admitted | Redis, day | Redis, month | over (day; month) | slack | verdict |\n|---|---|---|---|---|---|---|\n")
	day := budgetRows(sk.tenants(), sk.redisBase.Day, end.Day, admitted, slack)
	month := budgetRows(sk.tenants(), sk.redisBase.Month, end.Month, admitted, slack)
	for i, d := range day {
		m := month[i]
		fmt.Fprintf(md, "| %s | %d | %d | %d | %d; %d | %d | %s |\n", d.Tenant, d.Admitted, d.End-d.Base, m.End-m.Base,
			d.over(), m.over(), d.Slack, fail(!d.ok() || !m.ok()))
	}
	md.WriteString("\n")
}

// samplesLast sums, over the gateways of the run, the last sample of
// each (its counters since its start): requests throttled, refused for a
// quota.
func (sk *soak) samplesLast() sample {
	sk.samplesMu.Lock()
	byGen := map[int]sample{}
	for _, g := range sk.samples {
		byGen[g.Gateway] = g
	}
	sk.samplesMu.Unlock()
	if g, err := sk.gateway().gauges(sk.tenants()); err == nil {
		byGen[sk.gateway().gen] = g
	}
	var sum sample
	for g := range maps.Values(byGen) {
		sum.Throttled += g.Throttled
		sum.QuotaRefuse += g.QuotaRefuse
	}
	return sum
}
