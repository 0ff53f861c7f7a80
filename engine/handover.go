package engine

// A handover (cmd/flexway/handover.go) passes the listener ports, bound,
// from the running process to its successor: the engine then takes its
// ports from Options.Listen instead of binding them. A socket so obtained
// may be held by another descriptor too (the one kept to pass it on, the
// old process's during a handover), so closing the engine's descriptor
// would not stop it listening: a port a reload retires is shut down first
// (shutdown(2) on a listening socket stops it listening for every holder:
// connections to it are refused, as without a handover), then closed.
// On a stop the ports are only closed: the successor serves them.

import (
	"net"

	"github.com/flexway/flexway/engine/kernel"
)

// WithListen makes the engine obtain its listener ports from listen
// instead of binding them (a handover's inherited sockets). listen is
// called from New, Serve and Reload; a port a reload retires is shut down
// for every holder of its socket.
func WithListen(listen func(network, addr string) (*net.TCPListener, error)) Option {
	return func(o *Options) { o.Listen = listen }
}

// closeRetired closes a port a reload retired; with Options.Listen, its
// socket stops listening first, whoever else holds it.
func (a *acceptor) closeRetired(ln *net.TCPListener) {
	if a.e.opts.Listen != nil {
		if rc, err := ln.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { _ = kernel.StopListening(int(fd)) })
		}
	}
	_ = ln.Close()
}

// StopAccepting closes the listener ports without draining (idempotent;
// Stop drains after): a handover's old process stops accepting while its
// successor, which holds the same sockets, accepts what comes. Safe from
// any goroutine.
func (e *Engine) StopAccepting() { e.acc.stop() }
