// Package conn is the gateway's one flow-control mechanism: every socket
// the reactor serves, client or broker, has one Conn from its OnOpen to its
// close, with one write queue bounded by a high and a low watermark and a
// read pause counted by reason.
//
// Envoy's rule, on gnet: a queue that passes its high mark tells its owner
// (Above), one that falls back to its low mark tells it again (Below); the
// owner of a pair of connections pauses the other side's reads for the
// reason PeerFull and resumes them. The other reasons (the budget, the
// quota's mute, a dial, a test) are set and dropped the same way; a Conn is
// read again when its last reason is gone. gnet has no read pause, so a
// pause detaches the socket from gnet (a dup keeps it open, out of every
// epoll set: the kernel's receive buffer fills and the peer's window
// closes) and a resume enrolls it again on the same loop.
//
// Invariants it owns:
//   - A Conn never writes through gnet's outbound buffer: what the socket
//     does not take waits in the Conn's queue (kernel.Queue), so a pause
//     never waits for gnet to flush, the queue's length is the one measure
//     of what a peer has not read, and the loop's watcher (kernel.Watcher)
//     is the one signal that the socket takes more: the tick asks poll(2)
//     only of a socket the watcher is not armed for (no watcher, or its
//     arming failed).
//   - A pause is applied at a safe point (Loop.Settle, at the end of a
//     callback): slices a caller peeked stay valid until its callback ends.
//   - Bytes gnet read and the owner had not consumed when the socket was
//     detached (the stash) are read first after the resume; order holds in
//     both directions.
//   - The owner hears of the socket's end exactly once (Owner.Closed),
//     whether it ends attached, detached, re-enrolling or at the engine's stop.
//   - A pause with no reason left is resumed: no socket stays detached for
//     a reason that was dropped meanwhile.
package conn
