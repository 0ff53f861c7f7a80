package main

// The handover (issue 36, U4): SIGUSR2 starts the binary at flexway's own
// path (a package upgrade has replaced it) with every listening socket of
// this process, bound: every cluster's ports, the TLS port, the admin
// endpoint, those a reload added included. The new process loads and
// checks its configuration as -check does, starts its engine on the
// sockets it was given (a cluster refused by U3 that this process serves
// refuses the handover), starts accepting, tells systemd its pid
// (MAINPID=, then READY=1, in one message) and only then tells this process, which stops
// accepting and drains as on SIGTERM. A new process that cannot serve
// exits, and this one goes on serving and logs why. The descriptors pass
// by github.com/cloudflare/tableflip (inheritance, the readiness pipe, one
// upgrade at a time, the new process killed if not ready in time).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cloudflare/tableflip"
	"github.com/coreos/go-systemd/v22/daemon"
	"golang.org/x/sys/unix"
)

// handoverTimeout bounds a new process's start: not ready within it, it
// is killed and the old one goes on serving.
const handoverTimeout = 30 * time.Second

// handoverSettle is the time an old process, no longer accepting, still
// serves before its drain: a connection it accepted as its successor
// became ready gets its first answers, not a reset.
const handoverSettle = 200 * time.Millisecond

// handoverStatus is the service's status line (systemctl status): the
// package's upgrade (packaging/flexway-handover) hands over a gateway
// whose status says so, and restarts an older one.
const handoverStatus = "STATUS=serving; SIGHUP reloads the configuration, SIGUSR2 upgrades by handover"

// refusedEnv passes to the new process the clusters the old one refuses
// (U3): only a cluster refused anew fails the handover.
const refusedEnv = "FLEXWAY_HANDOVER_REFUSED"

var (
	upgOnce sync.Once
	upg     *tableflip.Upgrader
	upgErr  error
)

// upgrader is the process's one tableflip.Upgrader (tableflip allows one;
// run may be called more than once in tests).
func upgrader() (*tableflip.Upgrader, error) {
	upgOnce.Do(func() { upg, upgErr = tableflip.New(tableflip.Options{UpgradeTimeout: handoverTimeout}) })
	return upg, upgErr
}

// sockets are the listening sockets of this process, by network and
// address as asked: those to pass on at a handover.
type sockets struct {
	upg  *tableflip.Upgrader // nil: no handover (logged)
	mu   sync.Mutex
	open map[[2]string]*net.TCPListener
}

func newSockets(log *slog.Logger) *sockets {
	u, err := upgrader()
	if err != nil {
		log.Warn("flexway upgrades by handover unavailable", "error", err.Error())
	}
	return &sockets{upg: u, open: map[[2]string]*net.TCPListener{}}
}

// inherited reports whether this process was started by a handover.
func (s *sockets) inherited() bool { return s.upg != nil && s.upg.HasParent() }

// listen returns the socket the old process passed on for network and
// addr, else binds it (keep-alive off on accepted connections, as the
// engine's own bind).
func (s *sockets) listen(network, addr string) (*net.TCPListener, error) {
	if s.upg != nil {
		ln, err := s.upg.Listener(network, addr)
		if err != nil {
			return nil, err
		}
		if tl, ok := ln.(*net.TCPListener); ok && listening(tl) {
			s.keep(network, addr, tl)
			return tl, nil
		} else if ln != nil {
			_ = ln.Close() // a port the old process retired after a failed handover: bound anew
		}
	}
	ln, err := (&net.ListenConfig{KeepAlive: -1}).Listen(context.Background(), network, addr)
	if err != nil {
		return nil, err
	}
	tl := ln.(*net.TCPListener)
	s.keep(network, addr, tl)
	return tl, nil
}

// listenAny is listen as a net.Listener (the admin endpoint).
func (s *sockets) listenAny(network, addr string) (net.Listener, error) {
	return s.listen(network, addr)
}

func (s *sockets) keep(network, addr string, ln *net.TCPListener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open[[2]string{network, addr}] = ln
}

// listening reports whether ln's socket still listens (a retired port's
// socket was shut down, engine/handover.go).
func listening(ln *net.TCPListener) bool {
	rc, err := ln.SyscallConn()
	if err != nil {
		return false
	}
	v, ok := 0, false
	err = rc.Control(func(fd uintptr) {
		var gerr error
		v, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
		ok = gerr == nil
	})
	return err == nil && ok && v == 1
}

// handOver passes every socket still open to a new process started from
// the binary's path and waits until it is ready (nil) or has failed.
// refused names the clusters this process refuses (U3).
func (s *sockets) handOver(refused map[string]string) error {
	if s.upg == nil {
		return errors.New("upgrades by handover are unavailable on this system")
	}
	s.mu.Lock()
	n := 0
	for k, ln := range s.open {
		if !listening(ln) { // closed (a port retired, the admin endpoint moved)
			delete(s.open, k)
			continue
		}
		if err := s.upg.AddListener(k[0], k[1], ln); err != nil {
			s.mu.Unlock()
			return err
		}
		n++
	}
	s.mu.Unlock()
	names := make([]string, 0, len(refused))
	for name := range refused {
		names = append(names, name)
	}
	slices.Sort(names)
	if err := os.Setenv(refusedEnv, strings.Join(names, ",")); err != nil {
		return err
	}
	return s.upg.Upgrade()
}

// ready tells the old process, if any, that this one serves: it stops
// accepting. Unused inherited sockets are closed.
func (s *sockets) ready() error {
	if s.upg == nil {
		return nil
	}
	return s.upg.Ready()
}

// stop closes the sockets kept for a handover: on SIGTERM, the ports stop
// listening when the engine closes its own.
func (s *sockets) stop() {
	if s.upg != nil {
		s.upg.Stop()
	}
}

// refusedAnew lists the clusters the new process refuses (U3) that the
// old one did not: a failed check.
func refusedAnew(refused map[string]string, old string) []string {
	was := map[string]bool{}
	for _, n := range strings.Split(old, ",") {
		was[n] = true
	}
	var out []string
	for name, why := range refused {
		if !was[name] {
			out = append(out, fmt.Sprintf("cluster %s: %s", name, why))
		}
	}
	slices.Sort(out)
	return out
}

// announce tells systemd the service is ready and, after a handover, that
// this process is its main one (MAINPID= before READY=1, in one message:
// NotifyAccess=all in the unit); then the old process, which stops
// accepting and drains.
func (s *sockets) announce(log *slog.Logger) {
	if !s.inherited() {
		notify(daemon.SdNotifyReady + "\n" + handoverStatus)
		_ = s.ready()
		return
	}
	notify(fmt.Sprintf("MAINPID=%d\n%s\n%s", os.Getpid(), daemon.SdNotifyReady, handoverStatus))
	if err := s.ready(); err != nil {
		log.Error("flexway handover: the old process could not be told", "error", err.Error())
		return
	}
	log.Info("flexway handover: this process serves the old one's sockets", "pid", os.Getpid())
}

// adoptWatchdog makes a handover's new process the one that feeds
// systemd's watchdog: systemd named the pid it started (WATCHDOG_PID, which
// the new process inherits), and the new process is now the main one.
func (s *sockets) adoptWatchdog() {
	if s.inherited() && os.Getenv("WATCHDOG_PID") != "" {
		_ = os.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	}
}
