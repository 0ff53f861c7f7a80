// Package relay is the broker side of one client connection: the queue of
// requests in flight (answers go back in request order, matched by the
// correlation id the gateway gave each request) and the in-flight byte
// budgets (B2). It holds no socket: engine drives it on the connection's loop.
package relay
