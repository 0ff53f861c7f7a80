// Package session is one client connection and its broker connection as
// a Kafka session: the client's framing, authentication and TLS, the
// decide verdict applied, its own broker connection (dialed, secured,
// renewed), the answers matched and rewritten, the budgets, quotas and
// day/month counters spent, the records streamed or spliced between the
// two sockets, the pair's reactions to each other's write-queue marks, and
// its close. A session lives on one gnet loop (Loop) and needs no lock;
// what the sessions of an engine share is its Env. The engine (package
// engine) owns the sockets and calls in: Env.Open at an accept, Traffic at
// each read, Loop.Tick at each tick, Loop.DrainPass at the stop,
// Env.Revoke at a reload.
//
// Invariants it owns (DESIGN.md, with the tests that hold them):
//   - 1: a connection pair lives on one loop; 3: a closed connection is
//     never touched again; 8: a panic closes one connection (Env.Recovered).
//   - 4: answers go back in request order; 5: a request goes on only with
//     its answer's bytes granted; 11: a client's last requests are not lost.
//   - 17: activity is not progress (the sweep's deadlines); 19: one
//     tenant while it has connections.
//   - 21, 26: streamed answers and Produce requests; 39, 41, 42: records
//     spliced between the sockets, bounded by the destination's room.
//   - 27, 38, 40: the pair's reactions to the marks (flow.go).
//   - 28: a stop answers what it read; 10: a reload judges before it
//     returns; 33: a throttle is an answer, then silence (KIP-219); 34: one
//     write per connection per traffic event; 43: a close's cause decides
//     FIN or reset.
package session
