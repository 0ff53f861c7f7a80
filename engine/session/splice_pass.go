package session

// The loop's pipe for the splice pass (engine/splice), shared by both
// directions: the records of a streamed Produce request from the client's
// socket to the broker's (produce_splice.go, invariant 39) and those of a
// streamed Fetch answer from the broker's socket to the client's
// (fetch_splice.go, invariant 41). The loop owns both sockets and the
// pipe; a pass runs inside the source connection's traffic callback.

import (
	"github.com/flexway/flexway/engine/kernel"
	"github.com/flexway/flexway/engine/splice"
)

// pipe returns the loop's pipe, nil when none can be made (nothing is
// spliced on this loop then; tried again after a while; never where the
// kernel has no splice).
func (lp *Loop) pipe() *splice.Pipe {
	if lp.pp != nil {
		lp.pp.Short.Store(lp.env.Tune.PipeShort.Load())
		return lp.pp
	}
	if lp.ppFailed > 0 {
		lp.ppFailed--
		return nil
	}
	p, err := splice.NewPipe()
	if err != nil {
		lp.ppFailed = 1000
		return nil
	}
	p.Short.Store(lp.env.Tune.PipeShort.Load())
	lp.pp = p
	return p
}

// closePipe closes the loop's pipe (made anew at its next use).
func (lp *Loop) closePipe() {
	if p := lp.pp; p != nil {
		p.Close()
		lp.pp = nil
	}
}

// room is what a pass may move to the destination fd: what its socket
// takes (invariant 42), -1 (not bounded) when tests turn the bound off.
func (env *Env) room(fd int) int {
	if !env.Tune.RoomBound.Load() {
		return -1
	}
	return kernel.Room(fd)
}
