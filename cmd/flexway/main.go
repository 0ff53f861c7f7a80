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
	e, err := engine.New(ctx, snap, engine.WithLogger(log))
	if err != nil {
		fmt.Fprintln(stderr, "flexway:", err)
		return 1
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
	adm := &admin{e: e, log: log}
	adm.start(snap.AdminAddress())
	banner(stdout, snap, len(e.Addrs()), e.EmbeddedBrokers(), e.RefusedClusters(), time.Now())
	log.Info("flexway started", "listeners", len(e.Addrs()), "loops", e.Loops())
	// SIGHUP is caught before systemd hears READY=1: a reload asked as soon
	// as the service is up must not be lost.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	notify(daemon.SdNotifyReady)
	stopWatchdog := watchdog(context.Background(), e) // until the drain is over too
	defer stopWatchdog()

	for running := true; running; {
		select {
		case <-ctx.Done():
			running = false
		case err := <-errc:
			if err != nil {
				fmt.Fprintln(stderr, "flexway:", err)
				return 1
			}
			running = false
		case <-hup:
			notify(daemon.SdNotifyReloading)
			reload(ctx, *path, e, adm, log)
			notify(daemon.SdNotifyReady)
		}
	}
	drain(e, log)
	return 0
}

// drain stops the engine on SIGTERM or SIGINT (systemd's stop sends
// SIGTERM, KillSignal=): systemd is told STOPPING=1 first, then the
// listeners close and every request already read is answered, each
// connection closed once nothing is owed to it (U4), within
// server.shutdown_timeout. A second signal cuts the drain short.
func drain(e *engine.Engine, log *slog.Logger) {
	notify(daemon.SdNotifyStopping)
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
