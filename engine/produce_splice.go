package engine

// The records of a large Produce request, spliced on the loop (issue
// 11.4, invariant 39). A streamed Produce (produce_stream.go) passes its
// record bytes through untouched; read into the loop's buffer and written
// out again they cost two copies per byte, most of the gateway's CPU when
// producing. When the stream is inside a partition's records with at least
// produceSpliceMin of them to come, everything read is consumed, and both
// sides are in clear text, the records already waiting in the client's
// socket go to the broker's by the loop's splice pass (splice_pass.go),
// inside the client's traffic event. The broker's batch is flushed first
// and its connection must have nothing unsent, so the spliced bytes follow
// everything written before them. A full broker socket ends the pass: what
// the pipe still holds is written to the broker connection as any other
// bytes, and the producer's pause (flow.go) applies as before.

import (
	"sync/atomic"

	"github.com/flexway/flexway/codec"
	"github.com/panjf2000/gnet/v2"
)

// produceSpliceMin: a partition with fewer record bytes left to come than
// this is relayed through the loop's buffer (a pass costs at least two
// system calls). 0 turns it off.
var produceSpliceMin atomic.Int64

func init() { produceSpliceMin.Store(64 << 10) }

// produceSplicedBytes: record bytes spliced to brokers; producePipeOuts:
// the passes that met a full broker socket; produceUnits: the headers
// taken from the socket between two partitions' records (tests, profiles).
var produceSplicedBytes, producePipeOuts, produceUnits atomic.Int64

// spliceProduce moves what the client's socket holds of the current
// partition's records to the broker, when it may (see above); true when
// bytes moved (the stream went on by them). Runs on the loop, with
// nothing of the client buffered and the stream's piece written.
func (cl *client) spliceProduce() bool {
	ps := cl.ps.s
	if !cl.spliceMore(ps.RecordsLeft()) || ps.Pending() > 0 || cl.tls != nil || cl.tlsHS != nil || cl.closed {
		return false
	}
	u := cl.up
	if u == nil || u.closed || u.c == nil || u.sp != nil || (u.sec != nil && u.sec.tls != nil) {
		return false
	}
	if p, ok := cl.c.(*pausedConn); ok && (p.st != rpAttached || p.live == nil) {
		return false
	}
	if b := &cl.lp.out; b.toBroker.up == u {
		b.toBroker.flush() // what the event wrote before comes first
	}
	if u.closed || u.c.OutboundBuffered() > 0 {
		return false
	}
	cfd, bfd := cl.c.Fd(), u.c.Fd()
	if cfd < 0 || bfd < 0 {
		return false
	}
	pp := cl.lp.pipe()
	if pp == nil {
		return false
	}
	return cl.lp.splicePass(ps, cl, pp, cfd, bfd)
}

// The client's side of a pass (spliceEnds): its records go to its broker.

func (cl *client) spliceMore(left int) bool {
	min := produceSpliceMin.Load()
	return min > 0 && int64(left) >= min
}

func (cl *client) spliced(n int) { produceSplicedBytes.Add(int64(n)) }

// pipeFull: the broker's socket is full; what the pipe still holds is read
// out and written to the broker connection as any other bytes (it waits in
// gnet's buffer, and the producer's pause, flow.go, applies).
func (cl *client) pipeFull(rest int) {
	producePipeOuts.Add(1)
	var c gnet.Conn
	if u := cl.up; !u.closed && u.c != nil {
		c = u.c
	}
	if err := cl.lp.readOut(rest, c); err != nil {
		cl.close(closeInternal)
		cl.e.log.Error("kafka connection closed: splice pipe read failed", "cluster", cl.route.cluster.Name, "tenant", cl.ident.Tenant, "error", err)
	}
}

// unitOut writes straight to the broker's socket: the batch was flushed, nothing is unsent.
func (cl *client) unitOut(sl [][]byte) { _, _ = cl.up.c.Writev(sl) }

func (cl *client) unitTaken(int) { produceUnits.Add(1) }

func (cl *client) destClear() bool {
	u := cl.up
	return !cl.closed && !u.closed && u.c.OutboundBuffered() == 0
}

// streamFailed closes the client whose streamed Produce cannot go on, as
// feedProduce does for a malformed one: its frame is partly written to the
// broker, whose connection closes with it.
func (cl *client) streamFailed(why string) {
	cl.ps.s = nil
	cl.ts.request(codec.KeyProduce, decRefused, causeUnsupported)
	cl.close(closeMalformed, "cluster", cl.route.cluster.Name, "tenant", cl.ident.Tenant, "api_key", codec.KeyProduce, "version", cl.ps.version, "error", "streamed Produce: "+why)
}
