package session

import (
	"net"
	"time"

	"github.com/flexway/flexway/auth"
	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/engine/conn"
	"github.com/flexway/flexway/engine/looptls"
	"github.com/flexway/flexway/engine/signals"
	"github.com/flexway/flexway/relay"
	"github.com/panjf2000/gnet/v2"
	"github.com/twmb/franz-go/pkg/kbin"
)

type authState uint8

const (
	stPreAuth authState = iota
	stAuthing           // the worker pool holds the credentials; nothing is read
	stAuthed
)

type upState uint8

const (
	upNone upState = iota
	upDialing
	upReady
)

// client is one client connection and everything it owns: its session, its
// broker connection, its queue of answers and its budget. All of it lives
// on the connection's loop: no lock.
type Client struct {
	env    *Env
	c      *conn.Conn // its socket (engine/conn): set in OnOpen
	lp     *Loop
	route  Route
	ip     string
	tenant *relay.Tenant // from authentication on: its bounds and share
	// ts: the connection's series (its cluster and tenant; _anonymous
	// before authentication), connMech its mechanism label (O1).
	ts *signals.TenantSeries
	// The small fields together (an idle connection's bytes, issue 35.3).
	closed    bool
	ipCounted bool // counted against max_connections_per_ip (B1)
	connMech  signals.Mech
	// answered: an answer past the handshake (ApiVersions, SASL) was
	// written. Until then a close of a transient cause is a reset
	// (signals.CloseCause.Transient, invariant 43).
	answered bool

	auth clientAuth // its TLS and its authentication
	sess *decide.Session
	snap *configs.Snapshot

	up     clientUp // its broker connection
	queue  relay.Queue
	budget relay.Budget
	wait   budgetWait // held for its budgets (hold, resume)

	// quota: its tenant's day/month budget counters (budget_quota.go), nil
	// until a budget applies to its first Produce
	quota *tenantQuota

	clock clientClock   // what the sweep's deadlines run from (sweep.go)
	ps    produceStream // a large Produce relayed as it arrives (produce_stream.go)

	drain clientDrain // what it is still owed at the engine's stop, or owes at its own close
	q     *quotaConn  // the quotas (quota.go); nil until the first request under quotas
}

// clientAuth is a client's TLS stream and its authentication: the SASL
// exchange, who it is and until when.
type clientAuth struct {
	tls        *clientTLS  // after the TLS handshake
	tlsHS      *looptls.IO // during it
	mech       string      // the mechanism chosen by SaslHandshake
	ident      *auth.Identity
	sessEnd    time.Time // KIP-368: the session's end (I6, S3)
	reauthFrom instant   // its request's first byte read (its span's start)
	revoked    string    // set by a reload: why the next request closes (S2)
	state      authState
	legacySASL bool // SaslHandshake v0: the next frame is a raw SASL token
	reauthing  bool // a re-authentication is in the worker pool
}

// clientUp is a client's side of its broker connection.
type clientUp struct {
	conn *upstreamConn // nil until the first request past authentication dials it
	// state: upDialing while it is dialed, or its session renewed
	// (KIP-368 towards the broker): nothing is forwarded meanwhile.
	state upState
	// corr: the correlation id the gateway gave the last request it
	// forwarded (the broker sees the gateway's numbering).
	corr int32
}

// budgetWait is a client held until its budgets allow its next request:
// the bytes in flight (B2), its tenant's budget counters read once
// (budget_quota.go). The tick asks again (hold, resume).
type budgetWait struct {
	held bool
	// listed: in lp.held, the sweep's list (once: a connection resumed by
	// an answer and held again is not listed twice)
	listed bool
	// since: held for the tenant's share since then (the wait histogram)
	since instant
	// replica: held for the replica's budget, the wait counted (ReplicaWaits)
	replica bool
	// inListed: in lp.reading, paused until what it sent fits its
	// budgets (inbound.go)
	inListed bool
	// grant: the answer's bytes the in-flight budget granted the request
	// passing the chain (inflight.go), for its verdict
	grant int64
}

// clientClock is what the sweep's deadlines (sweep.go) are measured from.
type clientClock struct {
	opened     instant // auth_timeout runs from here
	lastActive instant // the last bytes read: idle_timeout runs from here
	// frameSince: bytes of a request not yet whole have waited since then
	// (zero: none). The sweep closes an authenticated connection whose
	// request is not whole within idle_timeout: a client that trickles a
	// frame, one byte at a time, is active but never done.
	frameSince instant
	// outLast: the client's unread bytes at the last sweep (B3); outSince:
	// they have not decreased, nor its socket taken any, since then: the
	// write timeout runs from here.
	outLast  int
	outSince instant
	took     uint32 // the socket's Took at the last sweep: it reads if it moved
	// reqSince: the read that brought the first byte of the request at
	// the head of the input (its span's start, O5; zero: not known, the
	// span starts at its judgement). older: the bytes at the head of the
	// input that came before the last read, with the read at prevRead or
	// earlier; left: what the input held after the last processing.
	reqSince, prevRead instant
	older, left        int
}

// clientDrain is what a client is still owed when the engine stops, and
// what it still owes its broker when it closes first.
type clientDrain struct {
	// on: the engine stops (U4, drain.go); left is what the connection may
	// still take: the bytes of the whole frames it held when the drain
	// began, the last requests it is owed answers for.
	on   bool
	left int
	// orphan holds the whole frames a client sent before it closed, copied
	// at its close: what a broker would still handle (see drainOrphans).
	orphan []byte
}

// newClient makes the client of a connection gnet opened (nil: refused
// for a bound); its handle is made in OnOpen, once it is kept.
func newClient(env *Env, c gnet.Conn, route Route) *Client {
	now := nowInstant()
	cl := &Client{env: env, route: route, clock: clientClock{opened: now, lastActive: now}}
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		cl.ip = a.IP.String()
	}
	snap := env.Snap.Load()
	l := snap.Listener
	if max := l.UnauthenticatedConnections(); max > 0 && env.Bounds.Unauth.Load() >= int64(max) {
		env.Refuse("max_unauthenticated_connections", "")
		return nil
	}
	if !env.Bounds.perIP.takeIP(cl.ip, l.ConnectionsPerIP()) {
		env.Refuse("max_connections_per_ip", "")
		return nil
	}
	cl.ipCounted = true
	env.Bounds.Unauth.Add(1)
	cl.budget = relay.Budget{Limit: preAuthInbound, Replica: env.Bounds.Replica, Requests: env.Bounds.Requests}
	cl.lp = env.loopOf(c.EventLoop())
	cl.lp.clients[cl] = struct{}{}
	cl.queue.Free = &cl.lp.pendings
	cl.snap = snap
	cl.ts = env.Signals.Tenant(route.clusterName(), "")
	env.Signals.ConnOpened(cl.ts)
	return cl
}

// onTraffic: the client sent bytes.
func (cl *Client) onTraffic() {
	cl.clock.prevRead, cl.clock.lastActive = cl.clock.lastActive, nowInstant()
	if hook := cl.env.Hooks.Traffic.Load(); hook != nil {
		(*hook)(cl)
	}
	switch {
	case cl.auth.tls != nil:
		cl.authn().tlsRead()
	case cl.auth.tlsHS != nil:
		cl.flow().feedHandshake() // the handshake's worker reads these
		return
	case cl.route.TLS:
		if cl.route.Cluster == nil {
			cl.authn().onTLSHello()
		}
		return
	}
	if cl.clock.frameSince.IsZero() {
		// Over TLS a part of a record counts too: it decrypts to nothing yet.
		cl.clock.frameSince = cl.clock.lastActive
	}
	if cl.clock.older = cl.clock.left; cl.clock.older == 0 {
		cl.clock.reqSince = cl.clock.lastActive // the head request's first byte came with this read
	}
	if cl.quotas().muted() && !cl.c.PausedFor(conn.Quota) {
		cl.quotas().quotaPause()
	}
	cl.process()
	cl.tlsEnded()
}

// The client's input: gnet's buffer on a plaintext port, the decrypted
// buffer on the TLS port. Its output is in client_write.go.

func (cl *Client) inBuffered() int {
	if cl.auth.tls != nil {
		return cl.auth.tls.rec.Buffered()
	}
	return cl.c.Buffered()
}

func (cl *Client) peek(n int) ([]byte, error) {
	if t := cl.auth.tls; t != nil {
		return t.rec.Peek(n)
	}
	return cl.c.Peek(n)
}

func (cl *Client) discard(n int) {
	cl.clock.older = max(cl.clock.older-n, 0)
	if t := cl.auth.tls; t != nil {
		t.rec.Discard(n)
		return
	}
	cl.c.Discard(n)
}

// waitsOnGateway: the frame at the head of the input is whole and waits
// for the gateway (its budget, its broker connection, a re-authentication).
func (cl *Client) waitsOnGateway() bool {
	return cl.wait.held || cl.up.state == upDialing || cl.auth.reauthing || cl.quotas().muted() || cl.c.PausedFor(conn.PeerFull)
}

// process handles every whole frame the connection holds, in order, until
// it must wait: for the worker pool, for its broker connection, or for its
// budget. While its head request waits on the gateway (budget, dial) the
// client is not read (syncReads, flow.go): what it pipelines waits in the
// kernel.
func (cl *Client) process() {
	defer cl.processed()
	for !cl.closed && !cl.wait.held && cl.auth.state != stAuthing && !cl.auth.reauthing && cl.up.state != upDialing && (!cl.quotas().muted() || (cl.ps.s != nil && !cl.q.paced)) {
		if cl.ps.s != nil {
			if !cl.producer().feedProduce() && !cl.readOn() {
				return
			}
			continue
		}
		n := cl.inBuffered()
		if n < codec.SizeLen {
			if n == 0 && cl.ps.ended {
				cl.producer().spliceOn() // the next request's head may wait in the socket
			}
			if cl.ps.s != nil || cl.readOn() {
				continue
			}
			return
		}
		hb, err := cl.peek(codec.SizeLen)
		if err != nil {
			return
		}
		size := codec.FrameSize(hb)
		limit := int32(configs.UnauthenticatedMaxRequestBytes)
		if cl.auth.state == stAuthed {
			limit = int32(cl.snap.Listener.MaxRequestBytes)
		}
		if size < 0 || size > limit {
			cl.frameTooLarge(size, limit)
			return
		}
		total := codec.SizeLen + int(size)
		if cl.drain.on && total > cl.drain.left {
			return // sent after the drain began (U4): never taken, nor streamed
		}
		if n < total {
			if cl.producer().beginProduce(size, n) || cl.readOn() {
				continue
			}
			cl.flow().refuseOverBudget(size)
			return
		}
		frame, err := cl.peek(total)
		if err != nil {
			return
		}
		cl.lp.out.lone = n == total // nothing after it in the buffer: written from its slices
		ok := cl.handle(frame[codec.SizeLen:])
		cl.lp.out.lone = false
		if !ok {
			cl.clock.frameSince = 0 // whole: the wait is the gateway's
			return                  // waiting: the frame stays in the buffer
		}
		if cl.closed {
			return
		}
		cl.discard(total)
		cl.ps.gather = false
		if cl.drain.on {
			cl.drain.left -= total
		}
		if cl.quotas().muted() {
			cl.quotas().quotaPause() // a throttle: the client is not read for its time
		}
		cl.auditor().nextRequest()
	}
}

// processed: the end of a processing. What the input holds (over TLS, a
// record not yet whole too) came before the next read (onTraffic); reads
// are paused or resumed.
func (cl *Client) processed() {
	if !cl.closed {
		cl.clock.left = cl.inBuffered() + cl.auditor().recordPart()
	}
	cl.flow().syncReads()
}

func (cl *Client) frameTooLarge(size, limit int32) {
	if codec.LooksLikeTLS(size) {
		cl.close(signals.CloseTLSOnPlaintext, "cluster", cl.route.Cluster.Name)
		return
	}
	if cl.auth.state != stAuthed {
		cl.close(signals.ClosePreAuthTooLarge, "size", size, "max_request_bytes", limit)
		return
	}
	cl.close(signals.CloseTooLarge, "cluster", cl.route.Cluster.Name, "tenant", cl.auth.ident.Tenant, "size", size, "max_request_bytes", limit)
}

// handle judges one frame, in its steps: what comes before the session,
// the gateway's own answers, admission, decide's verdict, the verdict
// applied. It returns false when the frame waits in the buffer (for the
// budget or the broker connection), true when it is done with (forwarded,
// answered, dropped, or the connection closed).
func (cl *Client) handle(frame []byte) bool {
	if cl.auth.legacySASL {
		cl.auth.legacySASL = false
		cl.authn().authenticate(frame, nil)
		return true
	}
	h, err := cl.parseRequest(frame)
	if err != nil {
		cl.protocolError(h, err)
		return true
	}
	if cl.auth.state != stAuthed {
		cl.authn().handlePreAuth(&h, frame)
		return true
	}
	return cl.admitChain(h, frame) // chain.go
}

// parseRequest reads a request's header, and the body of an ApiVersions
// the gateway answers itself.
func (cl *Client) parseRequest(frame []byte) (codec.RequestHeader, error) {
	h, err := codec.ParseRequestHeader(frame)
	if err == nil && h.Key == codec.KeyApiVersions && cl.env.versions(cl.route.Cluster.Name).Has(codec.KeyApiVersions, h.Version) {
		err = apiVersionsBody(h.Version, frame[h.BodyOffset:])
	}
	return h, err
}

// apiVersionsBody checks the body of an ApiVersions request of a version
// the gateway answers: empty before v3; from v3 (KIP-511) the client's
// software name and version, then tagged fields, then nothing. Kafka
// closes a connection whose request it cannot read, ApiVersions included;
// so does the gateway (a hostile probe's tag length of 0xFFFFFFFF used to
// be answered in full). A version the gateway does not answer is not read:
// it gets KIP-511's v0 answer with UNSUPPORTED_VERSION.
func apiVersionsBody(version int16, body []byte) error {
	r := kbin.Reader{Src: body}
	if version >= 3 {
		r.Span(int(r.Uvarint()) - 1) // client_software_name (compact, not null)
		r.Span(int(r.Uvarint()) - 1) // client_software_version
		n := r.Uvarint()
		for i := uint32(0); i < n && r.Ok(); i++ {
			r.Uvarint()              // tag
			r.Span(int(r.Uvarint())) // its bytes
		}
	}
	switch {
	case !r.Ok():
		return codec.ErrCodecShort
	case len(r.Src) > 0:
		return codec.ErrCodecTrailing
	}
	return nil
}

func (cl *Client) protocolError(h codec.RequestHeader, err error) {
	cl.auditor().count(-1, signals.Refused, signals.CauseUnsupported, 0)
	cl.auditor().auditMalformed(&h) // under its API only when its header parsed (issue 33.3)
	if cl.auth.state != stAuthed {
		cl.close(signals.ClosePreAuthMalformed, "api_key", h.Key, "error", err.Error())
		return
	}
	cl.close(signals.CloseMalformed, "cluster", cl.route.Cluster.Name, "tenant", cl.auth.ident.Tenant, "api_key", h.Key, "version", h.Version, "error", err.Error())
}
