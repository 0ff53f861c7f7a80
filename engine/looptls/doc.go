// Package looptls is TLS on the reactor, for both directions: the
// standard crypto/tls over an adapter (IO) whose bytes are the loop's.
//
//   - A handshake that must wait on its peer runs on a worker goroutine
//     (a client's: a handshake cannot resume after an error, so it cannot
//     run on the loop): IO's Read waits for the bytes the loop feeds it
//     (Feed), its Write goes to the loop (AsyncWrite).
//   - After the handshake (a client's, or a broker connection's done by
//     the dial on its blocking socket and handed off), the record layer
//     runs on the loop: IO reads the socket's buffered bytes and answers
//     "would block" when there are none (a temporary net.Error, which
//     tls.Conn does not remember); Record decrypts what is buffered into
//     its plaintext buffer, framed by the owner as in clear text, and
//     encrypts a vectored write as one record.
//
// Invariants it owns:
//   - A would-block is temporary: a tls.Conn that met one reads again
//     (TestWorkerHandshakeThenLoopRecords).
//   - Slices peeked from a Record stay valid until the next Discard: the
//     plaintext buffer is replaced, never rewritten in place, when it grows.
//   - Off the loop IO only copies: the loop's buffers are the loop's.
package looptls
