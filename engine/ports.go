package engine

// The listener ports a reload adds and retires (S1): a cluster added by a
// reload gets its plaintext fallback range, a cluster removed loses it.
// The acceptor's goroutine polls a fixed list of ports; a reload changes
// the list under the acceptor's lock and wakes the goroutine with one byte
// on its wake pipe (closing the pipe is the stop): it closes the retired
// ports, which it alone polls, and polls the ports in force.

import (
	"net"
	"sort"
	"strconv"

	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine/kernel"
	"github.com/flexway/flexway/engine/session"
)

// polled closes the retired ports and returns the ports in force and the
// descriptors to poll, the wake pipe first; false when a port cannot be
// polled (logged) or the acceptor stops. Called by the accept goroutine.
func (a *acceptor) polled() ([]*listenSpec, *kernel.PollSet, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return nil, nil, false
	}
	kept := a.specs[:0]
	for _, s := range a.specs {
		if s.retired {
			a.closeRetired(s.ln)
			continue
		}
		kept = append(kept, s)
	}
	a.specs = kept
	specs := append([]*listenSpec(nil), kept...)
	fds := &kernel.PollSet{}
	fds.Add(int(a.wakeR.Fd()), kernel.Readable)
	for _, s := range specs {
		var fd int
		rc, err := s.ln.SyscallConn()
		if err == nil {
			err = rc.Control(func(p uintptr) { fd = int(p) })
		}
		if err != nil {
			a.e.log.Error("kafka listener unusable", "address", s.addr, "error", err.Error())
			return nil, nil, false
		}
		// The descriptor stays valid: a port is closed by this goroutine
		// (retired) or after it returned (stop).
		fds.Add(fd, kernel.Readable)
	}
	return specs, fds, true
}

// woken reads the wake pipe: a reload's byte (pollChanged), or its end
// (stop closed it: pollStop).
func (a *acceptor) woken() pollState {
	var b [64]byte
	n, err := a.wakeR.Read(b[:])
	if n == 0 || err != nil {
		return pollStop
	}
	select {
	case <-a.quit:
		return pollStop
	default:
		return pollChanged
	}
}

// wake tells the goroutine that the ports changed; under mu.
func (a *acceptor) wake() {
	if a.wakeW != nil && !a.stopped {
		_, _ = a.wakeW.Write([]byte{1})
	}
}

// portSpec is one port a reload would open, before it is bound.
type portSpec struct {
	host  string
	port  int
	route session.Route
}

// bindAll binds ports: every one or none (the first failure closes those
// bound before it and is returned). The result is not polled until adopt.
func (a *acceptor) bindAll(ports []portSpec) ([]*listenSpec, error) {
	var out []*listenSpec
	for _, p := range ports {
		s := &listenSpec{network: listenNetwork(p.host), addr: net.JoinHostPort(p.host, strconv.Itoa(p.port)), route: p.route}
		ln, err := a.bind(s.network, s.addr)
		if err != nil {
			closeSpecs(out)
			return nil, err
		}
		s.ln = ln
		out = append(out, s)
	}
	return out, nil
}

func closeSpecs(specs []*listenSpec) {
	for _, s := range specs {
		_ = s.ln.Close()
	}
}

// adopt puts specs (bound by bindAll) in force: the goroutine polls them
// from its next turn. After stop, they are closed.
func (a *acceptor) adopt(specs []*listenSpec) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		closeSpecs(specs)
		return
	}
	a.specs = append(a.specs, specs...)
	a.wake()
}

// retire stops serving the plaintext ports of the clusters gone: the
// goroutine closes them (before it runs, they are closed here).
func (a *acceptor) retire(gone map[string]bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return
	}
	kept := a.specs[:0]
	for _, s := range a.specs {
		if c := s.route.Cluster; c != nil && gone[c.Name] {
			if !a.started {
				if s.ln != nil {
					a.closeRetired(s.ln)
				}
				continue
			}
			s.retired = true
		}
		kept = append(kept, s)
	}
	a.specs = kept
	a.wake()
}

// clusterPorts lists the plaintext ports of the clusters named (nil: all)
// in snap's fallback ranges: from for the bootstrap, from+1+n for node
// first_node_id+n (L2), in the order of the clusters' names.
func clusterPorts(snap *configs.Snapshot, only map[string]bool) []portSpec {
	l := snap.Listener
	if l.Plaintext == nil {
		return nil
	}
	host := "0.0.0.0"
	if l.Plaintext.BindHost != "" {
		host = l.Plaintext.BindHost
	}
	names := make([]string, 0, len(l.Plaintext.Clusters))
	for name := range l.Plaintext.Clusters {
		if only == nil || only[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []portSpec
	for _, name := range names {
		pc := l.Plaintext.Clusters[name]
		cl := snap.Clusters[name]
		if cl == nil {
			continue // refused at load; kept safe here
		}
		for port := pc.Ports.From; port <= pc.Ports.To; port++ {
			node := int32(-1)
			if port > pc.Ports.From {
				node = pc.FirstNodeID + int32(port-pc.Ports.From-1)
			}
			out = append(out, portSpec{host: host, port: port, route: session.Route{Cluster: cl, Node: node}})
		}
	}
	return out
}
