package session

// Coalesced writes: what one traffic event writes to one connection goes
// out in one system call at the event's end, not one per frame. A read of
// the client's socket brings several pipelined Produce requests; a read of
// the broker's brings several answers. Each used to cost its own writev
// (issue 11.4: two writes per Produce round trip whatever the reads).
//
// During an event (Traffic, loop.go) the loop's batches take the writes of
// small frames: their bytes are copied (the input they come from is
// released frame by frame, and a gnet Peek across its ring is a pooled
// copy given back at the next Discard, so a reference would not last to
// the event's end). A frame larger than coalesceMax flushes the batch and
// is written at once, from its own slices, as before. Outside an event
// (the sweep, a dial's end, an authentication's result) nothing is
// batched. Writes to a connection keep their order: one batch per side,
// flushed before any direct write to its connection, before the gateway
// closes a client, and when a client is released.

// coalesceMax: a frame up to this size is copied into the batch; larger,
// it is written from its slices (a copy would cost more than the call).
// 64 KiB, the largest frame not streamed (codec.MaxStreamUnit): the Java
// producer's pipelined requests of 16 KiB batches (some 46 KB) read
// together leave in one write rather than one each, and each write
// to a broker on two cores gives the broker's thread the loop's core
// (BENCHMARKS.md, "2026-12-08: frames up to 64 KiB coalesced").
const coalesceMax = 64 << 10

// BatchMax bounds a batch: a frame that would take it past this flushes
// it first. The loop keeps the buffer between events up to this size.
const BatchMax = 256 << 10

// outBatch is the bytes an event owes one connection: the client cl (in
// clear or over TLS) or the broker connection up, one of them at a time.
type outBatch struct {
	cl  *Client
	up  *upstreamConn
	buf []byte
	one [1][]byte
}

// batches is a loop's two batches: to a client, to a broker. An event
// writes to one client and its broker connection.
type batches struct {
	on bool // an event is under way: writes are batched
	// lone: the request being handled is the last whole frame in the
	// client's buffer; written to the broker at once from its slices when
	// the batch is empty (one call either way: a copy saved per request).
	lone     bool
	toClient outBatch
	toBroker outBatch
}

// begin starts batching for an event; end flushes and stops.
func (b *batches) begin() { b.on = true }

func (b *batches) end() {
	b.on = false
	b.toBroker.flush()
	b.toClient.flush()
}

// flush writes what the batch holds, once, unless its connection is gone.
// The batch is emptied first: a failed write closes the connection at
// once, and that close flushes (or drops) this batch again, re-entrantly.
func (o *outBatch) flush() {
	cl, up, buf := o.cl, o.up, o.buf
	o.drop()
	if len(buf) == 0 {
		return
	}
	switch {
	case cl != nil && !cl.closed:
		if t := cl.auth.tls; t != nil {
			_ = t.rec.Write(buf) // one record for the batch
		} else {
			_ = cl.c.Write(buf)
		}
		cl.answers().syncOut()
	case up != nil && !up.closed && up.c != nil:
		up.send(one(&o.one, buf))
	}
}

// drop forgets what the batch holds (its connection is gone).
func (o *outBatch) drop() {
	o.cl, o.up = nil, nil
	if cap(o.buf) > BatchMax {
		o.buf = nil
	} else {
		o.buf = o.buf[:0]
	}
}

// add copies one frame, given as slices, into the batch for cl or up;
// false: the frame is too large to copy, write it at once (the batch
// was flushed).
func (o *outBatch) add(cl *Client, up *upstreamConn, bs [][]byte) bool {
	n := 0
	for _, b := range bs {
		n += len(b)
	}
	if (o.cl != cl || o.up != up) && len(o.buf) > 0 {
		o.flush() // another connection's: not expected within one event
	}
	if n > coalesceMax || len(o.buf)+n > BatchMax {
		o.flush()
		if n > coalesceMax {
			return false
		}
	}
	o.cl, o.up = cl, up
	for _, b := range bs {
		o.buf = append(o.buf, b...)
	}
	return true
}

// batchClient takes a frame for the client into the loop's batch; false:
// write it now (no event under way, or too large; the batch was flushed
// before). Over TLS the batch is one record rather than one per frame.
func (cl *Client) batchClient(bs [][]byte) bool {
	b := &cl.lp.out
	if !b.on {
		return false
	}
	return b.toClient.add(cl, nil, bs)
}

// batchBroker takes a frame for the broker connection into the loop's batch.
func (u *upstreamConn) batchBroker(bs [][]byte) bool {
	b := &u.cl.lp.out
	if !b.on || b.lone && len(b.toBroker.buf) == 0 {
		return false
	}
	return b.toBroker.add(nil, u, bs)
}

// flushOwn writes now what the loop's batches hold for cl and its broker
// connection (the gateway is about to close it); at a release
// (clientGone), what the client was owed is dropped: its socket is going.
func (cl *Client) flushOwn(clientGone bool) {
	if cl.lp == nil {
		return
	}
	b := &cl.lp.out
	if cl.up.conn != nil && b.toBroker.up == cl.up.conn {
		b.toBroker.flush()
	}
	if b.toClient.cl == cl {
		if clientGone {
			b.toClient.drop()
		} else {
			b.toClient.flush()
		}
	}
}

// one is a reusable one-slice vector for a write given as one []byte.
func one(p *[1][]byte, b []byte) [][]byte {
	p[0] = b
	return p[:]
}

// OwnerLoop is the loop of a connection's owner (a client or its broker
// connection), nil for anything else.
func OwnerLoop(ctx any) *Loop {
	switch x := ctx.(type) {
	case *Client:
		return x.lp
	case *upstreamConn:
		return x.cl.lp
	}
	return nil
}
