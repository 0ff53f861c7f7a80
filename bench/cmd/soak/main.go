// Command soak runs the gateway for minutes under every fault at once
// (issue 25.4, make soak): the built flexway binary on a real
// configuration (10 tenants, a contract declaring their topics, keys made
// by flexway keys new, per-tenant quotas and a day budget counted in a
// Redis of its own) in front of an embedded Kafka whose brokers sit behind
// Toxiproxy (internal/faults); per tenant an idempotent producer, a group,
// a transactional producer and a read_committed group (franz-go), some 200
// client connections; client connections cut at random, clients closed and
// started again, and, every few minutes, a fault of each kind: a broker's
// connections reset, Redis (server.counters) killed with SIGKILL and
// started again, a broker blackholed, a broker slow and narrow, a broker
// stopped (connections refused) and started again; the gateway itself
// killed with SIGKILL once, early, and started again on the same files.
// At the end every acknowledged record must be on the broker exactly once
// and read by its group, every transaction whole or absent, the gateway's
// RSS, file descriptors and goroutines, sampled every 10 s, flat after the
// warm-up, and across Redis's outages the gateway must have kept serving,
// said so once an outage, and Redis's budget counters must equal what it
// admitted; the report (report.md) and its plot (soak.png) go to the
// results folder, the exit status is 1 if anything failed.
//
//	soak -flexway bin/flexway -duration 10m
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/flexway/flexway/internal/faults"
	"github.com/twmb/franz-go/pkg/kfake"
)

// settings are the soak's flags.
type settings struct {
	bin, out                 string
	duration, sampleEvery    time.Duration
	cutEvery, restartEvery   time.Duration
	txnEvery                 time.Duration
	tenants, members, rate   int
	rcMembers                int
	size                     int
	drainFor                 time.Duration
	partitions               int
	killGateway              bool
	upgradeGateway           bool
	rssRule, fdRule, goRule  flatRule
	gwLogs                   []string
	start                    time.Time
	eventsTopic, ledgerTopic string
}

func parseFlags() settings {
	s := settings{eventsTopic: "events", ledgerTopic: "ledger"}
	flag.StringVar(&s.bin, "flexway", "bin/flexway", "the flexway binary")
	flag.StringVar(&s.out, "out", "", "the results folder (default bench/results/soak-<date>)")
	flag.DurationVar(&s.duration, "duration", 10*time.Minute, "the soak's length (make soak SOAK=1h)")
	flag.DurationVar(&s.sampleEvery, "sample", 10*time.Second, "how often the gateway's gauges are read")
	flag.DurationVar(&s.cutEvery, "cut", 2*time.Second, "how often a client connection is cut at random")
	flag.DurationVar(&s.restartEvery, "restart", 15*time.Second, "how often a client is closed and started again")
	flag.DurationVar(&s.txnEvery, "txn", 500*time.Millisecond, "a tenant's transactions: one every")
	flag.IntVar(&s.tenants, "tenants", 10, "tenants")
	flag.IntVar(&s.members, "members", 4, "members of each tenant's events group")
	flag.IntVar(&s.rcMembers, "rc-members", 2, "members of each tenant's read_committed ledger group")
	flag.IntVar(&s.rate, "rate", 50, "events per second per tenant")
	flag.IntVar(&s.size, "size", 200, "record size, bytes")
	flag.IntVar(&s.partitions, "partitions", 3, "partitions per topic")
	flag.DurationVar(&s.drainFor, "drain", 3*time.Minute, "how long the groups may take to read everything at the end")
	flag.BoolVar(&s.killGateway, "kill", true, "kill the gateway with SIGKILL once and start it again")
	flag.BoolVar(&s.upgradeGateway, "upgrade", true, "upgrade the gateway by handover (SIGUSR2) once, before the kill")
	flag.Parse()
	if abs, err := filepath.Abs(s.bin); err == nil {
		s.bin = abs // the gateway runs in its own folder
	}
	if s.out == "" {
		s.out = filepath.Join("bench", "results", "soak-"+time.Now().Format("2006-01-02T15-04-05"))
	}
	// The flatness rules (one-sided: growth fails, a fall passes).
	s.rssRule = flatRule{Ratio: 1.2, Slack: 8} // MiB
	s.fdRule = flatRule{Ratio: 1.2, Slack: 16}
	s.goRule = flatRule{Ratio: 1.2, Slack: 16}
	return s
}

func main() {
	s := parseFlags()
	code, err := run(&s)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

// soak is a run in progress.
type soak struct {
	s       *settings
	cluster *faults.Cluster
	dir     string // the gateway's folder
	keys    []tenantKey
	base    int
	b       *books
	conns   *conns
	events  []event // what happened when: faults, the gateway's restart

	gwMu sync.Mutex
	gw   *gateway

	redis     *redisServer
	redisBase budgets  // the budget counters in Redis when the running gateway started
	outages   []outage // Redis's, in order

	upgraded upgradeResult // upgrade.go

	samplesMu sync.Mutex
	samples   []sample
}

// event is a moment of the run the report and the plot mark.
type event struct {
	At   time.Duration
	What string
}

func (sk *soak) mark(what string) {
	at := time.Since(sk.s.start)
	sk.events = append(sk.events, event{at, what})
	fmt.Printf("%7.1fs  %s\n", at.Seconds(), what)
}

func (sk *soak) gateway() *gateway {
	sk.gwMu.Lock()
	defer sk.gwMu.Unlock()
	return sk.gw
}

// run sets the soak up, runs it, drains it and reports; its int is the
// exit status (1: something failed).
func run(s *settings) (int, error) {
	sk := &soak{s: s, b: newBooks(), conns: &conns{set: map[net.Conn]struct{}{}}}
	sk.dir = filepath.Join(s.out, "gateway")
	if err := os.MkdirAll(sk.dir, 0o755); err != nil {
		return 0, err
	}
	var topics []string
	for i := range s.tenants {
		topics = append(topics, fmt.Sprintf("tenant-%02d.%s", i, s.eventsTopic), fmt.Sprintf("tenant-%02d.%s", i, s.ledgerTopic))
	}
	c, err := faults.Open(kfake.NumBrokers(3), kfake.SeedTopics(int32(s.partitions), topics...))
	if err != nil {
		return 0, err
	}
	defer c.Close()
	sk.cluster = c
	var removeRedis func()
	if sk.redis, removeRedis, err = startRedis(filepath.Join(s.out, "redis")); err != nil {
		return 0, err
	}
	defer removeRedis()
	defer func() { sk.redis.kill() }()
	if sk.keys, sk.base, err = writeConfig(s.bin, sk.dir, c.ListenAddrs(), sk.redis.url(), s.tenants); err != nil {
		return 0, err
	}
	s.start = time.Now()
	sk.b.start = s.start
	if err := sk.startGateway(); err != nil {
		return 0, err
	}
	defer func() { sk.gateway().kill() }()
	fmt.Printf("soak: %v, %d tenants, results in %s\n", s.duration, s.tenants, s.out)
	stopWork, stopConsumers := sk.startWorkload()
	if err := sk.chaos(); err != nil {
		return 0, err
	}
	stopWork()
	sk.mark("producers stopped and flushed")
	drained := sk.drain()
	stopConsumers()
	sk.mark(fmt.Sprintf("groups stopped (drained: %v)", drained))
	r, err := sk.final()
	if err != nil {
		return 0, err
	}
	return sk.report(r), nil
}

// startGateway starts a gateway (the first, or the next after a kill),
// once it has read what Redis holds of the budgets (what the gateway
// before sent: the base of the budget check).
func (sk *soak) startGateway() error {
	base, err := sk.redis.stableBudgets(sk.tenants())
	if err != nil {
		return fmt.Errorf("reading the budget counters: %w", err)
	}
	sk.redisBase = base
	sk.s.gwLogs = append(sk.s.gwLogs, filepath.Join(sk.s.out, fmt.Sprintf("gateway-%d.log", len(sk.s.gwLogs)+1)))
	gw, err := startGateway(sk.s.bin, sk.dir, sk.s.gwLogs[len(sk.s.gwLogs)-1], sk.base)
	if err != nil {
		return err
	}
	gw.gen = 1
	if old := sk.gateway(); old != nil {
		gw.gen = old.gen + 1
	}
	sk.gwMu.Lock()
	sk.gw = gw
	sk.gwMu.Unlock()
	return nil
}

// startWorkload starts every tenant's clients and the sampler; the first
// func stops the writers (they flush), the second the groups and sampler.
func (sk *soak) startWorkload() (stopWriters, stopReaders func()) {
	s := sk.s
	wctx, stopW := context.WithCancel(context.Background())
	rctx, stopR := context.WithCancel(context.Background())
	var writers, readers sync.WaitGroup
	var loops []loop
	goLoop := func(wg *sync.WaitGroup, f func(l loop)) {
		l := newLoop()
		loops = append(loops, l)
		wg.Add(1)
		go func() { defer wg.Done(); f(l) }()
	}
	for i, k := range sk.keys {
		f := clientFactory{bootstrap: fmt.Sprintf("127.0.0.1:%d", sk.base), key: k, conns: sk.conns, b: sk.b}
		goLoop(&writers, func(l loop) { produceLoop(wctx, f, l, sk.b, i, s.eventsTopic, s.rate, s.size) })
		goLoop(&writers, func(l loop) { txnLoop(wctx, f, l, sk.b, i, s.ledgerTopic, s.txnEvery, s.size) })
		for range s.members {
			goLoop(&readers, func(l loop) {
				consumeLoop(rctx, f, l, sk.b, "consume", "readers", s.eventsTopic, false, sk.b.read)
			})
		}
		for range s.rcMembers {
			goLoop(&readers, func(l loop) {
				consumeLoop(rctx, f, l, sk.b, "consume rc", "ledger-readers", s.ledgerTopic, true, sk.b.ledger)
			})
		}
	}
	readers.Add(1)
	go func() { defer readers.Done(); sk.sampleLoop(rctx) }()
	cctx, stopChurn := context.WithCancel(context.Background())
	var churn sync.WaitGroup
	churn.Add(1)
	go func() { defer churn.Done(); sk.churn(cctx, loops) }()
	return func() {
			stopChurn()
			churn.Wait()
			stopW()
			writers.Wait()
		}, func() {
			stopR()
			readers.Wait()
		}
}
