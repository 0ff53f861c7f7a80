// Package splice is the loop's splice pass, for both directions: the
// records of a streamed Produce request from the client's socket to the
// broker's, and those of a streamed Fetch answer from the broker's socket
// to the client's. Between the headers the gateway rewrites, a
// partition's records pass through untouched; read into the loop's buffer
// and written out again they would cost two copies per byte. A pass moves
// what the source's socket holds of a partition's records through the
// loop's pipe to the destination's socket, with non-blocking calls, on the
// loop, inside the source's traffic callback (epoll is level-triggered:
// what it leaves in the socket brings another callback).
//
// Invariants it owns:
//   - A pass splices no more into the pipe than the destination's socket
//     takes (its room, when the owner bounds it) and ends before a full
//     one (Ends.RoomOut): what waits stays in the source's socket.
//   - The pipe is empty whenever a pass returns: what the destination did
//     not take is read out and written as any other bytes (Ends.PipeFull).
//   - The stream counts every byte a pass moves (SkipRecords) and the
//     units between partitions are fed to it whole (Unit: looked at, then
//     taken for what the stream used), so the rewrite stays exact.
package splice
