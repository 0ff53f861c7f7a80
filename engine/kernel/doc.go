// Package kernel is the socket calls the gnet reactor lacks, each small and
// allocation-free on the hot path: a write queue flushed with writev(2)
// (Queue), the loop's pipe and splice(2) (Pipe), what a socket's send
// buffer still takes (Room, RoomMin) and what it holds unsent (Unsent), a
// peek at what a socket holds (Peek), poll(2) (PollSet), the socket
// options SO_LINGER and TCP_USER_TIMEOUT (SetLinger, SetUserTimeout), a
// detached socket made a net.Conn again (Adopt), and the watcher that says
// when a socket takes more (Watcher: the one writable signal). Outside
// this package, engine calls the kernel only through gnet and Go's net:
// no other file of it imports x/sys/unix (internal/shape checks).
//
// Invariants it owns:
//   - Nothing here blocks: every socket is non-blocking, EAGAIN and EINTR
//     are "nothing done", never errors (Queue.WriteTo, Pipe.To).
//   - A Queue keeps the order of what it was given and no pointer into its
//     chunks outlives a call (the iovec scratch is cleared after writev).
//   - Linux-only calls (splice, epoll, SIOCOUTQ) are behind
//     //go:build linux && !flexway_portable; elsewhere they report ErrUnsupported (or -1 for
//     Room: not bounded), so that callers fall back to copying and to the
//     tick, and the gateway builds and serves on any Unix gnet runs on.
//     The tag flexway_portable picks the fallbacks on Linux too, so that
//     they are tested where the tests run (TestQuickstartPortableBuild).
package kernel
