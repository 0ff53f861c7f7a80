// Package relay is what a client connection and its broker connection may
// hold and when a request may go on: the queue of requests in flight
// (answers go back in request order, matched by the correlation id the
// gateway gave each request), the in-flight byte budgets (B2), the Admit
// verdict that judges each request against them, and the Tenant that a
// tenant's connections share (its bounds, B1). It holds no socket: engine
// drives it on the connection's loop.
package relay
