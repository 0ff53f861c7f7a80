package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/flexway/flexway/engine/kernel"
	"github.com/flexway/flexway/engine/session"

	"github.com/panjf2000/gnet/v2"

	"github.com/flexway/flexway/engine/signals"
)

// The listener ports are the engine's own sockets, not gnet's: gnet accepts
// whenever a listener is readable and cannot be told to stop, and
// max_connections (L3) is "a gauge of occupation, never a refusal: more
// connections wait in the kernel queue". So one goroutine accepts for every
// listener port, and only while fewer than max_connections client
// connections are open; at the bound it stops calling accept(2) and the
// kernel's listen queue (somaxconn, as Go's net.Listen sets it) holds the
// newcomers until a client connection closes. Each accepted connection is
// handed to a gnet loop with Engine.Register (EventLoop.Enroll on the least
// loaded loop); its OnOpen finds its route in the context it carries.
//
// A reload adds and retires ports (a cluster added or removed, S1): the
// new ports are bound before the reload is adopted (a port taken refuses
// it whole), then handed to the goroutine, which polls them from its next
// turn; a retired port is closed by the goroutine itself, once it no
// longer polls it (ports.go).

// acceptWait bounds an accept(2) after poll said a connection was queued:
// should it have gone meanwhile, the other ports never wait for it.
const acceptWait = 50 * time.Millisecond

// listenSpec is one listener port: where it binds and what it serves.
type listenSpec struct {
	network, addr string // "tcp4", "127.0.0.1:9092"
	route         session.Route
	ln            *net.TCPListener // bound in New (port 0: the TLS port of tests), else in Serve; at a reload, before it is adopted
	retired       bool             // a reload removed its cluster: closed by the accept goroutine (under acceptor.mu)
}

// acceptedConn is the context of a connection the acceptor handed to gnet,
// until OnOpen makes it a client.
type acceptedConn struct {
	route  session.Route
	opened bool // set by OnOpen, on the loop; read once the enroll reported
}

// acceptor owns the listener sockets and the accept goroutine.
type acceptor struct {
	e *Engine
	// slots holds one token per client connection accepted and not yet
	// closed (its OnClose gives it back): max_connections tokens at most.
	slots chan struct{}
	specs []*listenSpec // under mu once the goroutine runs
	quit  chan struct{}
	done  chan struct{}
	log   *signals.RateLimiter

	mu               sync.Mutex
	started, stopped bool
	wakeR, wakeW     *os.File // closing wakeW ends the goroutine's poll
}

func newAcceptor(e *Engine, maxConns int) *acceptor {
	a := &acceptor{
		e:     e,
		slots: make(chan struct{}, maxConns),
		quit:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	a.log = signals.NewRateLimiter(1)
	return a
}

// listenNetwork is the family gnet chose for an address: an IPv4 address
// listens on IPv4 only, an IPv6 one on IPv6 only.
func listenNetwork(host string) string {
	if ip := net.ParseIP(host); ip != nil {
		if ip.To4() != nil {
			return "tcp4"
		}
		return "tcp6"
	}
	return "tcp"
}

// bind opens one listener port, or takes it from Options.Listen (a
// handover's inherited sockets, handover.go). Keep-alive stays off on the
// accepted connections, as under gnet (idle_timeout closes the silent ones).
func (a *acceptor) bind(network, addr string) (*net.TCPListener, error) {
	if a.e.opts.Listen != nil {
		ln, err := a.e.opts.Listen(network, addr)
		if err != nil {
			return nil, fmt.Errorf("listeners.kafka: %w", err)
		}
		return ln, nil
	}
	lc := net.ListenConfig{KeepAlive: -1}
	ln, err := lc.Listen(context.Background(), network, addr)
	if err != nil {
		return nil, fmt.Errorf("listeners.kafka: %w", err)
	}
	return ln.(*net.TCPListener), nil
}

// add declares a listener port; port 0 is bound at once (the test's TLS
// port), so that its route is known before Serve. It returns the port.
func (a *acceptor) add(host string, port int, route session.Route) (int, error) {
	s := &listenSpec{network: listenNetwork(host), addr: net.JoinHostPort(host, strconv.Itoa(port)), route: route}
	if port == 0 {
		ln, err := a.bind(s.network, s.addr)
		if err != nil {
			return 0, err
		}
		s.ln = ln
		port = ln.Addr().(*net.TCPAddr).Port
		s.addr = net.JoinHostPort(host, strconv.Itoa(port))
	}
	a.specs = append(a.specs, s)
	return port, nil
}

// listen binds every listener port not bound yet; the first failure closes
// them all and is the error of the start.
func (a *acceptor) listen() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return errors.New("engine stopped")
	}
	for _, s := range a.specs {
		if s.ln != nil {
			continue
		}
		ln, err := a.bind(s.network, s.addr)
		if err != nil {
			a.closeListeners()
			return err
		}
		s.ln = ln
	}
	r, w, err := os.Pipe()
	if err != nil {
		a.closeListeners()
		return err
	}
	a.wakeR, a.wakeW = r, w
	return nil
}

func (a *acceptor) closeListeners() {
	for _, s := range a.specs {
		if s.ln != nil {
			_ = s.ln.Close()
			s.ln = nil
		}
	}
}

// start runs the accept goroutine: gnet's loops are running (the first
// tick), connections can be enrolled.
func (a *acceptor) start() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started || a.stopped || a.wakeR == nil {
		return
	}
	a.started = true
	go a.run()
}

// stop ends the accept goroutine and closes the listeners (connections
// still queued in the kernel are reset); idempotent.
func (a *acceptor) stop() {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return
	}
	a.stopped = true
	started := a.started
	close(a.quit)
	if a.wakeW != nil {
		_ = a.wakeW.Close()
	}
	a.mu.Unlock()
	if started {
		<-a.done
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// The goroutine has returned: no poll reads these descriptors any more.
	a.closeListeners()
	if a.wakeR != nil {
		_ = a.wakeR.Close()
	}
}

// free gives back the place of a client connection that closed: the
// goroutine, if it waited at the bound, accepts the next queued one.
func (a *acceptor) free() {
	select {
	case <-a.slots:
	default:
	}
}

// open counts the client connections holding a place (tests).
func (a *acceptor) open() int { return len(a.slots) }

// run is the accept goroutine. A place is taken before the listeners are
// even polled: at max_connections the goroutine waits on slots, and nothing
// is accepted, refused or reset. A reload's wake makes it poll the ports
// in force again (ports.go), its place kept.
func (a *acceptor) run() {
	defer close(a.done)
	specs, fds, ok := a.polled()
	if !ok {
		return
	}
	next, backoff := 0, time.Duration(0)
	for {
		select {
		case a.slots <- struct{}{}:
		case <-a.quit:
			return
		}
		i, st := a.ready(fds, &next)
		for st == pollChanged {
			if specs, fds, ok = a.polled(); !ok {
				a.free()
				return
			}
			next = 0
			i, st = a.ready(fds, &next)
		}
		if st == pollStop {
			a.free()
			return
		}
		switch err := a.accept(specs[i]); {
		case err == nil:
			backoff = 0
		case errors.Is(err, net.ErrClosed), errors.Is(err, errStopping):
			return
		case errors.Is(err, os.ErrDeadlineExceeded):
			// The queued connection went away before accept: nothing to do.
		default:
			// Out of descriptors and the like: the listener stays readable,
			// so wait before trying again (the queue holds the clients).
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			if ok, _ := a.log.Allow(); ok {
				a.e.log.Warn("kafka listener accept failed", "address", specs[i].addr, "error", err.Error(), "retry_in", backoff.String())
			}
			select {
			case <-time.After(backoff):
			case <-a.quit:
				return
			}
		}
	}
}

var errStopping = errors.New("engine stopping")

// pollState is what ready saw.
type pollState uint8

const (
	pollReady   pollState = iota // a listener has a queued connection
	pollChanged                  // a reload added or retired ports (ports.go)
	pollStop                     // stop woke it
)

// ready waits until a listener has a queued connection and returns its
// index, the ports taken in turn; or a reload's wake, or stop's.
func (a *acceptor) ready(fds *kernel.PollSet, next *int) (int, pollState) {
	n := fds.Len() - 1
	for {
		if err := fds.Poll(-1); err != nil {
			a.e.log.Error("kafka listeners: poll failed", "error", err.Error())
			return 0, pollStop
		}
		if fds.Ready(0) != 0 {
			return 0, a.woken()
		}
		for k := 0; k < n; k++ {
			j := (*next + k) % n
			if fds.Ready(1+j) != 0 {
				*next = j + 1
				return j, pollReady
			}
		}
	}
}

// accept takes the connection queued on listener i (its place is taken)
// and enrolls it on a loop. On every error the place is given back.
func (a *acceptor) accept(spec *listenSpec) error {
	ln := spec.ln
	_ = ln.SetDeadline(time.Now().Add(acceptWait))
	c, err := ln.AcceptTCP()
	if err != nil {
		a.free()
		return err
	}
	if a.e.env.RefusedCluster(spec.route.Cluster) { // U3: refused at once
		_ = c.Close()
		a.free()
		return nil
	}
	// Socket options are the accepted socket's, kept by gnet's dup: Nagle
	// off (as gnet set it on its listeners), keep-alive off (bind).
	_ = c.SetNoDelay(true)
	if a.e.opts.Listen != nil {
		_ = c.SetKeepAlive(false) // an inherited socket's listener enables it (handover.go)
	}
	ac := &acceptedConn{route: spec.route}
	ctx := gnet.NewNetConnContext(gnet.NewContext(context.Background(), ac), c)
	res, err := a.e.eng.Register(ctx)
	if err != nil {
		_ = c.Close()
		a.free()
		return fmt.Errorf("enroll: %w", err)
	}
	select {
	case r := <-res:
		// A connection gnet did not open never reaches OnClose: its place
		// is given back here (gnet closed the socket).
		if r.Err != nil || !ac.opened {
			a.free()
			if r.Err != nil {
				return fmt.Errorf("enroll: %w", r.Err)
			}
		}
		return nil
	case <-a.quit:
		return errStopping
	}
}
