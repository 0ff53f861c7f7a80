package main

import (
	"log/slog"
	"syscall"

	"github.com/flexway/flexway/configs"
)

// descriptorMargin is what the process holds besides its Kafka
// connections: the listeners, the admin endpoint's connections (64), the
// brokers' metadata connections, files, the loops' pipes.
const descriptorMargin = 256

// descriptorsNeeded is what max_connections asks of the descriptor limit:
// a client's socket and its broker connection's for each, and the margin.
func descriptorsNeeded(maxConns int) uint64 { return 2*uint64(max(maxConns, 0)) + descriptorMargin }

// warnDescriptors says, at the start and at each reload, when the
// process's descriptor limit (RLIMIT_NOFILE, as Go's runtime raised it to
// the hard limit) is below what max_connections asks: connections past it
// wait in the listen queue (the accept fails and is retried, engine's
// accept loop) rather than being refused by the bound the operator set.
func warnDescriptors(log *slog.Logger, snap *configs.Snapshot) {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) != nil {
		return
	}
	need := descriptorsNeeded(snap.Listener.MaxConnections)
	if uint64(rl.Cur) >= need {
		return
	}
	log.Warn("descriptor limit below what max_connections asks: connections past it wait for a descriptor (LimitNOFILE= in the unit, or ulimit -n)",
		"max_connections", snap.Listener.MaxConnections, "descriptors_needed", need, "limit", uint64(rl.Cur))
}
