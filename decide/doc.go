// Package decide is the gateway's policy: for one session and one request,
// the verdict — forward with a rewrite, answer locally, refuse with the
// Kafka error code the seeds name, or disconnect — and the rewrite of the
// broker's answer back into the session's names.
//
// decide is pure: no sockets, no gnet, no clock; every verdict can be
// tested with bytes alone. The closed table (table.go) lists every API key
// that kmsg knows; one file per API (numbered by key) registers what it
// serves.
package decide
