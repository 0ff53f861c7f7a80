package main

// The admin endpoint (O4) and its address in force: server.admin.address
// is reloadable. A reload that moves it binds the new address before the
// engine adopts the configuration (a port taken refuses the reload whole,
// the old endpoint stays), then serves there and closes the old one.
// Both serve through serve, with the same bounds (admin_bounds.go).

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/flexway/flexway/engine"
)

// admin is the endpoint in force; used by run's goroutine only.
type admin struct {
	e    *engine.Engine
	log  *slog.Logger
	addr string // "" without an endpoint
	srv  *http.Server
	// listen binds the endpoint (nil: net.Listen); run gives the sockets
	// a handover passes on (handover.go).
	listen func(network, addr string) (net.Listener, error)
}

func (a *admin) bindTCP(addr string) (net.Listener, error) {
	if a.listen != nil {
		return a.listen("tcp", addr)
	}
	return net.Listen("tcp", addr)
}

// start serves the endpoint at addr ("" : none); a failure to bind is
// logged, the gateway runs without it (as at start before reloads moved it).
func (a *admin) start(addr string) {
	if addr == "" {
		return
	}
	ln, err := a.bindTCP(addr)
	if err != nil {
		a.log.Error("admin endpoint stopped", "address", addr, "error", err.Error())
		return
	}
	a.serve(addr, ln)
}

func (a *admin) serve(addr string, ln net.Listener) {
	srv := newAdminServer(adminHandler(a.e), a.log)
	a.addr, a.srv = addr, srv
	capped := newCapListener(ln, adminMaxConnections, a.log, addr)
	go func() {
		if err := srv.Serve(capped); err != nil && err != http.ErrServerClosed {
			a.log.Error("admin endpoint stopped", "address", addr, "error", err.Error())
		}
	}()
}

// bind opens addr for a reload that moves the endpoint there; nil (and no
// error) when the address stays or the endpoint goes.
func (a *admin) bind(addr string) (net.Listener, error) {
	if addr == a.addr || addr == "" {
		return nil, nil
	}
	ln, err := a.bindTCP(addr)
	if err != nil {
		return nil, fmt.Errorf("server.admin.address %s: %w", addr, err)
	}
	return ln, nil
}

// move puts a reload's address in force: ln (from bind) is served, the
// old endpoint closed.
func (a *admin) move(addr string, ln net.Listener) {
	if addr == a.addr {
		return
	}
	if a.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = a.srv.Shutdown(ctx)
		cancel()
		a.srv, a.addr = nil, ""
	}
	if ln != nil {
		a.serve(addr, ln)
		a.log.Info("admin endpoint moved", "address", addr)
	}
}
