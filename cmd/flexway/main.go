// Command flexway is the multi-tenant Kafka gateway.
//
//	flexway -config flexway.yaml          serve
//	flexway -check -config flexway.yaml   validate and exit
//	flexway keys new --id ID --tenant T --operations a,b [--expires 90d]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "keys" {
		os.Exit(runKeys(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flexway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "flexway.yaml", "the configuration file")
	check := fs.Bool("check", false, "validate the configuration and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	snap, err := configs.Load(*path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if *check {
		fmt.Fprintf(stdout, "%s: configuration valid\n", *path)
		return 0
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	socks := newSockets(log)
	e, err := engine.New(ctx, snap, engine.WithLogger(log), engine.WithListen(socks.listen))
	if err != nil {
		fmt.Fprintln(stderr, "flexway:", err)
		return 1
	}
	if socks.inherited() { // the handover's check: U3 as the old process saw it
		if bad := refusedAnew(e.RefusedClusters(), os.Getenv(refusedEnv)); len(bad) > 0 {
			log.Error("flexway handover refused: the new process refuses a cluster the old one did not (U3)", "clusters", strings.Join(bad, "; "))
			return 1
		}
	}
	stopOTLP, err := startOTLP(ctx, snap, e, log)
	if err != nil {
		fmt.Fprintln(stderr, "flexway:", err)
		return 1
	}
	defer stopOTLP()
	errc := make(chan error, 1)
	go func() { errc <- e.Serve() }()
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	err = e.Ready(rctx)
	rcancel()
	if err != nil {
		fmt.Fprintln(stderr, "flexway:", err)
		return 1
	}
	adm := &admin{e: e, log: log, listen: socks.listenAny}
	adm.start(snap.AdminAddress())
	banner(stdout, snap, len(e.Addrs()), e.EmbeddedBrokers(), e.RefusedClusters(), time.Now())
	log.Info("flexway started", "listeners", len(e.Addrs()), "loops", e.Loops())
	warnDescriptors(log, snap)
	// SIGHUP and SIGUSR2 are caught before systemd hears READY=1: a reload
	// or an upgrade asked as soon as the service is up must not be lost.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	socks.announce(log)
	socks.adoptWatchdog()
	stopWatchdog := watchdog(context.Background(), e) // until the drain is over too
	defer stopWatchdog()

	r := &running{path: *path, e: e, adm: adm, socks: socks, log: log}
	handedOver, code := r.loop(ctx, errc, sigs, stderr)
	if code != 0 {
		return code
	}
	if handedOver {
		// No new connection here; one accepted in the last instant gets its
		// first exchange answered before the drain looks at it (a connection
		// with no answer yet is reset by a stop).
		e.StopAccepting()
		time.Sleep(handoverSettle)
	} else {
		socks.stop() // SIGTERM: the ports stop listening with the engine's descriptors
	}
	drain(e, log, !handedOver)
	return 0
}

// running is the served process's state for its loop.
type running struct {
	path  string
	e     *engine.Engine
	adm   *admin
	socks *sockets
	log   *slog.Logger
}

// loop serves until SIGTERM or SIGINT (ctx), the engine's end, or a
// handover done (true): SIGHUP reloads (S1), SIGUSR2 upgrades
// (handover.go), one at a time, the loop still serving meanwhile.
func (r *running) loop(ctx context.Context, errc <-chan error, sigs <-chan os.Signal, stderr io.Writer) (handedOver bool, code int) {
	upgraded := make(chan error, 1)
	upgrading := false
	for {
		select {
		case <-ctx.Done():
			return false, 0
		case err := <-errc:
			if err != nil {
				fmt.Fprintln(stderr, "flexway:", err)
				return false, 1
			}
			return false, 0
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				notify(daemon.SdNotifyReloading)
				reload(ctx, r.path, r.e, r.adm, r.log)
				notify(daemon.SdNotifyReady)
				continue
			}
			if upgrading {
				r.log.Warn("flexway upgrade already in progress: signal ignored", "signal", sig.String())
				continue
			}
			upgrading = true
			r.log.Info("flexway upgrade: starting the new binary on the listening sockets", "binary", os.Args[0])
			refused := r.e.RefusedClusters()
			go func() { upgraded <- r.socks.handOver(refused) }()
		case err := <-upgraded:
			upgrading = false
			if err != nil {
				r.log.Error("flexway upgrade failed: this process goes on serving", "error", err.Error())
				continue
			}
			r.log.Info("flexway upgrade: the new process serves, this one stops accepting and drains")
			return true, 0
		}
	}
}

// drain stops the engine on SIGTERM or SIGINT (systemd's stop sends
// SIGTERM, KillSignal=): systemd is told STOPPING=1 first, then the
// listeners close and every request already read is answered, each
// connection closed once nothing is owed to it (U4), within
// server.shutdown_timeout. A second signal cuts the drain short.
// After a handover (stopping false) systemd is told nothing: the new
// process is the service's main one.
func drain(e *engine.Engine, log *slog.Logger, stopping bool) {
	if stopping {
		notify(daemon.SdNotifyStopping)
	}
	timeout := e.Snapshot().File.Server.ShutdownTimeout.D()
	if timeout <= 0 {
		timeout = configs.DefaultShutdownTimeout
	}
	log.Info("flexway stopping: draining requests in flight", "shutdown_timeout", timeout.String())
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	again := make(chan os.Signal, 1)
	signal.Notify(again, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(again)
	go func() {
		select {
		case sig := <-again:
			log.Warn("flexway stopping now: a second signal ends the drain", "signal", sig.String())
			cancel()
		case <-ctx.Done():
		}
	}()
	_ = e.Stop(ctx)
	log.Info("flexway stopped")
}

// notify tells systemd (Type=notify) of the service's state; a no-op
// outside systemd.
func notify(state string) { _, _ = daemon.SdNotify(false, state) }

// watchdog feeds systemd's watchdog, if one is set (WATCHDOG_USEC): at
// half its interval, and only while every loop answers its tick
// (engine.Engine.Watchdog): a loop stuck in a callback is seen.
func watchdog(ctx context.Context, e *engine.Engine) (stop func()) {
	every, err := daemon.SdWatchdogEnabled(false)
	if err != nil || every == 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Watchdog(ctx, every, func() { notify(daemon.SdNotifyWatchdog) })
	}()
	return func() { cancel(); <-done }
}

// reload applies SIGHUP (S1): a new snapshot, or the old one stays. A
// new admin address is bound first (admin.go): taken, the reload is refused.
func reload(ctx context.Context, path string, e *engine.Engine, adm *admin, log *slog.Logger) {
	snap, err := configs.Load(path)
	if err != nil {
		log.Error("configuration reload refused: the old configuration stays", "path", path, "errors", err.Error())
		return
	}
	ln, err := adm.bind(snap.AdminAddress())
	if err == nil {
		if err = e.Reload(ctx, snap); err != nil && ln != nil {
			ln.Close()
		}
	}
	if err != nil {
		log.Error("configuration reload refused: the old configuration stays", "path", path, "error", err.Error())
		return
	}
	adm.move(snap.AdminAddress(), ln)
	warnDescriptors(log, snap)
}

// boundsInForce is what /config shows (O4): the listener's bounds and
// timeouts in force, and the quotas, policies, counter store and audit
// (config_view.go); never a secret, a key or an address of a broker.
func boundsInForce(snap *configs.Snapshot) map[string]any {
	l := snap.Listener
	return map[string]any{
		"loaded_at":                       snap.LoadedAt,
		"max_request_bytes":               int64(l.MaxRequestBytes),
		"max_response_bytes":              int64(l.MaxResponseBytes),
		"max_connections":                 l.MaxConnections,
		"auth_timeout":                    l.AuthTimeout.D().String(),
		"idle_timeout":                    l.IdleTimeout.D().String(),
		"max_unauthenticated_connections": l.UnauthenticatedConnections(),
		"max_connections_per_ip":          l.ConnectionsPerIP(),
		"max_connections_per_tenant":      l.ConnectionsPerTenant(),
		"max_connection_rate_per_tenant":  l.ConnectionRatePerTenant(),
		"max_fetch_wait":                  l.MaxFetchWait.D().String(),
		"max_in_flight_bytes":             int64(l.MaxInFlightBytes),
		"max_tenant_in_flight_bytes":      int64(l.MaxTenantInFlightBytes),
		"max_total_in_flight_bytes":       int64(l.MaxTotalInFlightBytes),
		"max_session_lifetime":            l.MaxSessionLifetime.D().String(),
		"max_topic_partitions":            l.MaxTopicPartitions,
		"on_tenant_budget_exceeded":       l.OnTenantBudgetExceeded,
		"write_timeout":                   configs.WriteStallTimeout.String(),
		"shutdown_timeout":                snap.File.Server.ShutdownTimeout.D().String(),
		"quotas":                          quotasInForce(l.Quotas),
		"policies":                        policiesInForce(snap.File.Policies),
		"counters":                        countersInForce(snap.File.Server.Counters),
		"audit":                           auditInForce(snap.File),
		"observability":                   observabilityInForce(snap.File.Observability),
	}
}
