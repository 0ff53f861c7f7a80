package engine

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
type client struct {
	e         *Engine
	c         *conn.Conn // its socket (engine/conn): set in OnOpen
	lp        *loop
	closed    bool
	route     portRoute
	ip        string
	ipCounted bool          // counted against max_connections_per_ip (B1)
	tenant    *relay.Tenant // from authentication on: its bounds and share
	opened    time.Time
	// ts: the connection's series (its cluster and tenant; _anonymous
	// before authentication), connMech its mechanism label (O1).
	ts       *signals.TenantSeries
	connMech signals.Mech
	// throttling: set by the quota's judgement when the request being
	// handled is throttled; apply counts it "throttled" and clears it.
	throttling bool

	state      authState
	tls        *clientTLS  // after the TLS handshake
	tlsHS      *looptls.IO // during it
	mech       string      // the mechanism chosen by SaslHandshake
	legacySASL bool        // SaslHandshake v0: the next frame is a raw SASL token
	ident      *auth.Identity
	sessEnd    time.Time // KIP-368: the session's end (I6, S3)
	reauthing  bool      // a re-authentication is in the worker pool
	revoked    string    // set by a reload: why the next request closes (S2)
	sess       *decide.Session
	snap       *configs.Snapshot

	up     *upstreamConn
	upSt   upState
	upCorr int32
	queue  relay.Queue
	budget relay.Budget
	held   bool
	// listed: in lp.held, the sweep's list (once: a connection resumed by
	// an answer and held again is not listed twice)
	listed bool
	// waitSince: held for the tenant's share since then (the wait histogram)
	waitSince time.Time

	// orphan holds the whole frames a client sent before it closed, copied
	// at its close: what a broker would still handle (see drainOrphans).
	orphan []byte

	// quota: its tenant's day/month budget counters (budget_quota.go)
	quota tenantQuota

	lastActive time.Time
	// frameSince: bytes of a request not yet whole have waited since then
	// (zero: none). The sweep closes an authenticated connection whose
	// request is not whole within idle_timeout: a client that trickles a
	// frame, one byte at a time, is active but never done.
	frameSince time.Time
	outLast    int
	outSince   time.Time
	scratch    []byte
	ps         produceStream // a large Produce relayed as it arrives (produce_stream.go)

	// draining: the engine stops (U4, drain.go); drainLeft is what the
	// connection may still take: the bytes of the whole frames it held
	// when the drain began, the last requests it is owed answers for.
	draining  bool
	drainLeft int
	// answered: an answer past the handshake (ApiVersions, SASL) was
	// written. Until then a close of a transient cause is a reset
	// (signals.CloseCause.Transient, invariant 43).
	answered bool

	q *quotaConn // the quotas (quota.go); nil until the first request under quotas
}

// newClient makes the client of a connection gnet opened (nil: refused
// for a bound); its handle is made in OnOpen, once it is kept.
func newClient(e *Engine, c gnet.Conn, route portRoute) *client {
	now := time.Now()
	cl := &client{e: e, route: route, opened: now, lastActive: now}
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		cl.ip = a.IP.String()
	}
	snap := e.snap.Load()
	l := snap.Listener
	if max := l.UnauthenticatedConnections(); max > 0 && e.unauth.Load() >= int64(max) {
		e.refuse("max_unauthenticated_connections", "")
		return nil
	}
	if !e.limits.takeIP(cl.ip, l.ConnectionsPerIP()) {
		e.refuse("max_connections_per_ip", "")
		return nil
	}
	cl.ipCounted = true
	e.unauth.Add(1)
	cl.lp = e.loopOf(c.EventLoop())
	cl.lp.clients[cl] = struct{}{}
	cl.snap = snap
	cl.ts = e.m.Tenant(route.clusterName(), "")
	e.m.ConnOpened(cl.ts)
	return cl
}

// testHookTraffic, when set by a test, runs at each client traffic event
// (the panic test uses it). Always nil in production.
var testHookTraffic func(cl *client)

// onTraffic: the client sent bytes.
func (cl *client) onTraffic() {
	cl.lastActive = time.Now()
	if testHookTraffic != nil {
		testHookTraffic(cl)
	}
	switch {
	case cl.tls != nil:
		cl.tlsRead()
	case cl.tlsHS != nil:
		// The handshake worker reads these.
		if b, err := cl.c.Peek(cl.c.Buffered()); err == nil {
			cl.tlsHS.Feed(b)
			cl.c.Discard(len(b))
		}
		return
	case cl.route.tls:
		if cl.route.cluster == nil {
			cl.onTLSHello()
		}
		return
	}
	if cl.frameSince.IsZero() {
		// Over TLS a part of a record counts too: it decrypts to nothing yet.
		cl.frameSince = cl.lastActive
	}
	cl.process()
}

// The client's byte streams: gnet's buffers on a plaintext port, the
// decrypted buffer and tls.Conn on the TLS port.

func (cl *client) inBuffered() int {
	if cl.tls != nil {
		return cl.tls.rec.Buffered()
	}
	return cl.c.Buffered()
}

func (cl *client) peek(n int) ([]byte, error) {
	if t := cl.tls; t != nil {
		return t.rec.Peek(n)
	}
	return cl.c.Peek(n)
}

func (cl *client) discard(n int) {
	if t := cl.tls; t != nil {
		t.rec.Discard(n)
		return
	}
	cl.c.Discard(n)
}

func (cl *client) write(b []byte) {
	var v [1][]byte
	if cl.batchClient(one(&v, b)) {
		return
	}
	if t := cl.tls; t != nil {
		_ = t.rec.Write(b)
	} else {
		_ = cl.c.Write(b)
	}
	cl.syncOut()
}

// syncOut counts the client's unread bytes in its tenant's and the
// replica's shares (B2); a client with unread bytes is looked at again at
// each tick until it has read them.
func (cl *client) syncOut() {
	if cl.budget.Tenant == nil || cl.closed {
		return
	}
	cl.budget.SyncOutbound(int64(cl.c.Queued()))
}

// writev writes one frame given as slices: one vectored write in clear, one
// TLS write (records coalesced) over TLS.
func (cl *client) writev(bs [][]byte) {
	if cl.batchClient(bs) {
		return
	}
	if t := cl.tls; t != nil {
		_ = t.rec.Writev(bs)
	} else {
		_ = cl.c.Writev(bs)
	}
	cl.syncOut()
}

// waitsOnGateway: the frame at the head of the input is whole and waits
// for the gateway (its budget, its broker connection, a re-authentication).
func (cl *client) waitsOnGateway() bool {
	return cl.held || cl.upSt == upDialing || cl.reauthing || cl.muted() || cl.c.PausedFor(conn.PeerFull)
}

// process handles every whole frame the connection holds, in order, until
// it must wait: for the worker pool, for its broker connection, or for its
// budget. While its head request waits on the gateway (budget, dial) the
// client is not read (syncReads, flow.go): what it pipelines waits in the
// kernel.
func (cl *client) process() {
	defer cl.syncReads()
	for !cl.closed && !cl.held && cl.state != stAuthing && !cl.reauthing && cl.upSt != upDialing && (!cl.muted() || cl.ps.s != nil) {
		if cl.ps.s != nil {
			if !cl.feedProduce() {
				return
			}
			continue
		}
		n := cl.inBuffered()
		if n < codec.SizeLen {
			if n == 0 && cl.ps.ended {
				cl.spliceOn() // the next request's head may wait in the socket
			}
			return
		}
		hb, err := cl.peek(codec.SizeLen)
		if err != nil {
			return
		}
		size := codec.FrameSize(hb)
		limit := int32(configs.UnauthenticatedMaxRequestBytes)
		if cl.state == stAuthed {
			limit = int32(cl.snap.Listener.MaxRequestBytes)
		}
		if size < 0 || size > limit {
			cl.frameTooLarge(size, limit)
			return
		}
		total := codec.SizeLen + int(size)
		if cl.draining && total > cl.drainLeft {
			return // sent after the drain began (U4): never taken, nor streamed
		}
		if n < total {
			if cl.beginProduce(size, n) {
				continue
			}
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
			cl.frameSince = time.Time{} // whole: the wait is the gateway's
			return                      // waiting: the frame stays in the buffer
		}
		if cl.closed {
			return
		}
		cl.discard(total)
		cl.ps.gather = false
		if cl.draining {
			cl.drainLeft -= total
		}
		if cl.muted() {
			cl.quotaPause() // a throttle: the client is not read for its time
		}
		if cl.inBuffered() == 0 {
			cl.frameSince = time.Time{}
		} else {
			cl.frameSince = cl.lastActive // the next frame came with the last read, or before it
		}
	}
}

func (cl *client) frameTooLarge(size, limit int32) {
	if codec.LooksLikeTLS(size) {
		cl.close(signals.CloseTLSOnPlaintext, "cluster", cl.route.cluster.Name)
		return
	}
	if cl.state != stAuthed {
		cl.close(signals.ClosePreAuthTooLarge, "size", size, "max_request_bytes", limit)
		return
	}
	cl.close(signals.CloseTooLarge, "cluster", cl.route.cluster.Name, "tenant", cl.ident.Tenant, "size", size, "max_request_bytes", limit)
}

// handle judges one frame, in its steps: what comes before the session,
// the gateway's own answers, admission, decide's verdict, the verdict
// applied. It returns false when the frame waits in the buffer (for the
// budget or the broker connection), true when it is done with (forwarded,
// answered, dropped, or the connection closed).
func (cl *client) handle(frame []byte) bool {
	if cl.legacySASL {
		cl.legacySASL = false
		cl.authenticate(frame, nil)
		return true
	}
	h, err := cl.parseRequest(frame)
	if err != nil {
		cl.protocolError(h, err)
		return true
	}
	if cl.state != stAuthed {
		cl.handlePreAuth(&h, frame)
		return true
	}
	if !cl.checkSession() {
		return true
	}
	if cl.answerLocally(&h, frame) {
		cl.quotaLocal()
		return true
	}
	if cl.quotaHold(h.Key, len(frame)) {
		return false // its principal owes: it waits, muted (quota.go)
	}
	if cl.budgetWaits(h.Key) {
		return false // its tenant's budget is not read yet (budget_quota.go)
	}
	grant, ok := cl.admit(h.Key)
	if !ok {
		return cl.closed // else it waits
	}
	if cl.quotaGate(&h, len(frame)) {
		return true // a Fetch in debt, answered empty
	}
	p := cl.queue.Get()
	out := cl.judge(&h, frame, grant, p)
	if out == decide.Forward && h.Key == codec.KeyProduce {
		cl.ts.Produced(len(frame))
	}
	cl.quotaPending(p)
	cl.auditRequest(&h, frame, p, out) // O3, audit.go
	cl.apply(&h, p, out)
	return true
}

// parseRequest reads a request's header, and the body of an ApiVersions
// the gateway answers itself.
func (cl *client) parseRequest(frame []byte) (codec.RequestHeader, error) {
	h, err := codec.ParseRequestHeader(frame)
	if err == nil && h.Key == codec.KeyApiVersions && cl.e.versions[cl.route.cluster.Name].Has(codec.KeyApiVersions, h.Version) {
		err = apiVersionsBody(h.Version, frame[h.BodyOffset:])
	}
	return h, err
}

// answerLocally serves what an open session asks of the gateway itself,
// in order with the broker's answers: ApiVersions and the KIP-368
// re-authentication. It reports whether it did.
func (cl *client) answerLocally(h *codec.RequestHeader, frame []byte) bool {
	switch h.Key {
	case codec.KeyApiVersions:
		cl.scratch = cl.e.versions[cl.route.cluster.Name].AppendAnswer(cl.scratch[:0], h)
		cl.answerLocal(cl.scratch)
		cl.ts.Request(h.Key, signals.Allowed, signals.CauseNone)
		return true
	case codec.KeySASLHandshake, codec.KeySASLAuthenticate:
		cl.reauthRequest(h, frame)
		return true
	}
	return false
}

// judge asks decide for its verdict on a request granted grant bytes of
// answer; p receives what the answer will need.
func (cl *client) judge(h *codec.RequestHeader, frame []byte, grant int64, p *decide.Pending) decide.Outcome {
	out := cl.sess.Request(h, frame, cl.upCorr+1, int32(min(grant, int64(cl.fetchCap()))), p)
	cl.sess.FetchQuota = 0 // quotaGate's, for this request alone
	if out == decide.Forward && h.Key == codec.KeyProduce {
		out = cl.produceQuota(h, frame, p, out) // budget_quota.go
	}
	return out
}

// apply carries out decide's verdict: the request forwarded (its answer
// owed, its bytes reserved), answered by the gateway, dropped, or the
// connection closed.
func (cl *client) apply(h *codec.RequestHeader, p *decide.Pending, out decide.Outcome) {
	cl.countRequest(h.Key, p, out)
	switch out {
	case decide.Forward:
		cl.upCorr++
		cl.up.write(cl.sess.RW.Vec.Slices())
		if h.Key == codec.KeyProduce && cl.ps.large {
			cl.ps.large = false // a Produce whole in one read
			cl.syncMarks()
		}
		if cl.closed {
			return
		}
		if p.NoResponse {
			cl.queue.Put(p)
		} else {
			cl.budget.Reserve(p.Reserve)
			cl.queue.Push(p)
			cl.lp.pending.Add(1)
		}
	case decide.Answer:
		cl.answerPending(p)
	case decide.Drop:
		cl.queue.Put(p)
	case decide.Disconnect:
		cause := p.Cause
		cl.queue.Put(p)
		cl.close(signals.CloseRefusedAPI, "cluster", cl.route.cluster.Name, "tenant", cl.ident.Tenant, "api", decide.Name(h.Key), "version", h.Version, "cause", cause)
	}
}

// admit says whether the request may be forwarded now: its broker
// connection first (dialed at the first request), then the budgets (B2,
// relay.Budget.Admit): what the broker may answer must fit, except one
// answer alone. It returns the bytes granted, or false when the request
// waits (the dial, or held for the budget) or the connection was closed.
func (cl *client) admit(key int16) (int64, bool) {
	if cl.upSt == upNone {
		cl.dial()
		return 0, false
	}
	if cl.up.mustRenew() { // KIP-368 towards the broker (upstream_secure.go)
		return 0, false
	}
	ask := relay.Ask{
		Outbound:      int64(cl.c.Queued()),
		Want:          decide.AnswerReserve,
		CloseOnTenant: cl.snap.Listener.OnTenantBudgetExceeded == "close",
	}
	if key == codec.KeyFetch {
		ask.Want, ask.Min = int64(cl.fetchCap()), minFetchGrant
	}
	v := cl.budget.Admit(ask)
	switch v.Kind {
	case relay.Go:
		if !cl.waitSince.IsZero() {
			cl.e.m.TenantWait(cl.ts, time.Since(cl.waitSince))
			cl.waitSince = time.Time{}
		}
		return v.Grant, true
	case relay.Close: // relay.CauseTenantShare, the one cause a budget closes for
		cl.e.m.TenantBudget(cl.ts, false)
		cl.close(signals.CloseTenantShare, "cluster", cl.route.cluster.Name, "tenant", cl.ident.Tenant, "max_tenant_in_flight_bytes", cl.budget.Tenant.Limit)
		return 0, false
	case relay.WaitBytes:
		if v.By == relay.LevelTenant && cl.waitSince.IsZero() {
			cl.e.m.TenantBudget(cl.ts, true)
			cl.waitSince = time.Now()
		}
	}
	// WaitBytes and WaitUntil: the frame stays in the buffer; the tick asks again.
	cl.hold()
	return 0, false
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

// minFetchGrant: below this, a Fetch waits for the budget rather than ask
// for crumbs (unless the connection is idle: one answer crosses alone).
const minFetchGrant = 64 << 10

func (cl *client) fetchCap() int32 {
	return int32(min(int64(cl.snap.Listener.MaxResponseBytes)/2, int64(1<<31-1)))
}

// answerLocal writes (or queues behind the answers owed before it) one of
// the gateway's own answers to the handshake (ApiVersions, SASL), given as
// a whole frame.
func (cl *client) answerLocal(frame []byte) {
	if cl.queue.Len() == 0 {
		cl.write(frame)
		return
	}
	p := cl.queue.Get()
	p.Key = handshakeAnswer
	p.Local = append(p.Local[:0], frame...)
	cl.queue.Push(p)
}

// handshakeAnswer: the key of answerLocal's queued answers.
const handshakeAnswer = -1

// noteAnswer: an answer to a request of key was written to the client.
// One past the handshake makes the client answered.
func (cl *client) noteAnswer(key int16) {
	switch key {
	case handshakeAnswer, codec.KeyApiVersions, codec.KeySASLHandshake, codec.KeySASLAuthenticate:
	default:
		cl.answered = true
	}
}

// answerPending writes the answer decide built in the session's Vec.
func (cl *client) answerPending(p *decide.Pending) {
	sl := cl.sess.RW.Vec.Slices()
	if cl.queue.Len() == 0 {
		cl.writev(sl)
		cl.noteAnswer(p.Key)
		cl.answerThrottle(p)
		cl.queue.Put(p)
		return
	}
	p.Local = p.Local[:0]
	for _, s := range sl {
		p.Local = append(p.Local, s...)
	}
	cl.queue.Push(p)
}

// flushLocal writes the gateway's own answers now at the head of the queue.
func (cl *client) flushLocal() {
	for !cl.closed {
		p := cl.queue.Front()
		if p == nil || len(p.Local) == 0 {
			return
		}
		cl.queue.Pop()
		cl.write(p.Local)
		cl.noteAnswer(p.Key)
		cl.answerThrottle(p)
		cl.queue.Put(p)
	}
}

// hold parks the connection until its budget allows the next request.
func (cl *client) hold() {
	if cl.held {
		return
	}
	cl.held = true
	if !cl.listed {
		cl.listed = true
		cl.lp.held = append(cl.lp.held, cl)
	}
}

// resume retries a held connection (from the sweep, or when an answer frees bytes).
func (cl *client) resume() {
	if !cl.held || cl.closed {
		return
	}
	cl.held = false
	cl.process()
}

func (cl *client) protocolError(h codec.RequestHeader, err error) {
	cl.ts.Request(-1, signals.Refused, signals.CauseUnsupported)
	if cl.state != stAuthed {
		cl.close(signals.ClosePreAuthMalformed, "api_key", h.Key, "error", err.Error())
		return
	}
	cl.close(signals.CloseMalformed, "cluster", cl.route.cluster.Name, "tenant", cl.ident.Tenant, "api_key", h.Key, "version", h.Version, "error", err.Error())
}

// close closes the connection (and its broker connection) once, logged
// and counted as its cause says (signals.CloseCause); attrs are the line's
// key-value pairs.
func (cl *client) close(why signals.CloseCause, attrs ...any) {
	if cl.closed {
		return
	}
	if why.Transient() && !cl.answered {
		_ = cl.c.SetLinger(0)
	}
	cl.e.closingFor(why, cl.ts, attrs)
	cl.flushOwn(false)
	cl.c.Close()
	cl.release()
}

// reset closes the connection as close does, but with a reset (RST,
// SO_LINGER 0): what its socket still holds is dropped.
func (cl *client) reset(why signals.CloseCause, attrs ...any) {
	if cl.closed {
		return
	}
	_ = cl.c.SetLinger(0)
	cl.close(why, attrs...)
}

// release gives back everything the connection holds; idempotent.
// peerClosed: the client closed its side (not the gateway): the requests
// it sent before closing are still owed to the broker.
func (cl *client) release() { cl.releaseAs(false) }

func (cl *client) releaseAs(peerClosed bool) {
	if cl.closed {
		return
	}
	cl.flushOwn(true)
	cl.closed = true
	if cl.tlsHS != nil {
		_ = cl.tlsHS.Close()
	}
	delete(cl.lp.clients, cl)
	if cl.state != stAuthed {
		cl.e.unauth.Add(-1)
	}
	if cl.ipCounted {
		cl.e.limits.dropIP(cl.ip)
	}
	n := 0
	cl.queue.Each(func(p *decide.Pending) {
		if len(p.Local) == 0 {
			n++
		}
	})
	cl.lp.pending.Add(-int64(n))
	cl.budget.Release(cl.budget.Reserved)
	cl.budget.SyncOutbound(0)
	if cl.tenant != nil {
		cl.e.tenants.Release(cl.tenant, time.Now())
	}
	cl.quotaRelease()
	if cl.up != nil {
		if peerClosed && cl.state == stAuthed && cl.keepForDrain() {
			cl.e.m.ConnClosed(cl.ts, cl.connMech)
			return
		}
		cl.up.closeFromClient()
	}
	cl.e.m.ConnClosed(cl.ts, cl.connMech)
}

// keepForDrain decides, at a client's own close, whether its broker
// connection must live on: requests it sent and the gateway read but did
// not forward yet (waiting for the dial or the budget — an acks=0 Produce
// has no answer to wait for, a client may close right after it), or
// requests forwarded but not yet flushed to the broker. A broker handles
// what it read; so does the gateway. Only Produce is forwarded then:
// nothing else has an effect without its answer.
func (cl *client) keepForDrain() bool {
	if cl.streamingProduce() {
		return false // the broker holds a part of a frame: it can only be closed
	}
	if cl.tls != nil {
		cl.tlsRead()
	}
	if n := cl.inBuffered(); n > 0 {
		if b, err := cl.peek(n); err == nil {
			cl.orphan = append([]byte(nil), b...)
		}
	}
	u := cl.up
	if len(cl.orphan) == 0 && (u.c == nil || u.c.Queued() == 0) {
		return false
	}
	u.draining = true
	u.drainSince = time.Now()
	cl.lp.draining = append(cl.lp.draining, u)
	if u.ready {
		u.drainOrphans()
	}
	return true
}

func (cl *client) onClose(error) { cl.releaseAs(true) }
