package session

import (
	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/engine/signals"
)

// The drain's part on each loop (U4; the engine's Stop fans it out, see
// engine/drain.go): every session is marked, closed once nothing is owed.

// DrainPass runs on the loop: it marks the connections opened since the last
// pass, closes those owed nothing, and counts the others.
func (l *Loop) DrainPass() (conns int64) {
	for cl := range l.clients {
		if cl.closed {
			continue
		}
		if cl.auth.state != stAuthed {
			cl.close(signals.CloseDrained)
			continue
		}
		if !cl.drain.on {
			cl.drain.on = true
			cl.drain.left = cl.wholeFramesBuffered()
			cl.process() // a frame already whole and not yet taken
		}
		if cl.closed {
			continue
		}
		if cl.drained() {
			cl.close(signals.CloseDrained)
			continue
		}
		conns++
	}
	// Orphans (a client that left with requests unflushed): the sweep
	// closes each once flushed.
	for _, u := range l.draining {
		if !u.closed {
			conns++
		}
	}
	return conns
}

// drained: nothing is owed to a draining connection any more.
func (cl *Client) drained() bool {
	if cl.queue.Len() > 0 || cl.waitsOnGateway() {
		return false
	}
	if cl.drain.left >= codec.SizeLen {
		cl.process() // a frame the gateway read and has not taken
		if cl.closed || cl.queue.Len() > 0 || cl.waitsOnGateway() {
			return false
		}
	}
	return cl.c.Queued() == 0
}

// wholeFramesBuffered is the size of the whole frames at the head of the
// connection's input: the requests it sent before the drain began.
func (cl *Client) wholeFramesBuffered() int {
	n := cl.inBuffered()
	if n < codec.SizeLen {
		return 0
	}
	b, err := cl.peek(n)
	if err != nil {
		return 0
	}
	off := 0
	for off+codec.SizeLen <= n {
		size := codec.FrameSize(b[off:])
		if size < 0 || off+codec.SizeLen+int(size) > n {
			break
		}
		off += codec.SizeLen + int(size)
	}
	return off
}
