package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// hold keeps the set-up (the bench broker, the gateway, the splice relay,
// the Go proxy, warmed up) for experiments by hand: it writes hold.env in the results
// folder (the bootstrap addresses, the gateway's, the relay's and the Go proxy's
// process ids, the Java tools' SASL properties for the gateway and for the relay and the Go proxy) and waits
// until the file "hold" beside it is removed, or BENCH_HOLD_SECONDS
// (default 1800) pass. BENCH_PARTS=hold alone runs nothing else; the broker
// is wiped on exit as always.
func (h *harness) hold() {
	env := fmt.Sprintf("DIRECT=%s\nGATEWAY=%s\nRELAY=%s\nGATEWAY_PID=%d\nRELAY_PID=%d\nCLIENT_PROPS=%s\nKEY_ID=%s\nRELAY_PROPS=%s\nRELAY_USER=%s\n",
		h.broker, h.gwBoot, h.relayBoot, h.gwPID(), h.relayPID(), h.clientProps, h.keyID, h.relayProps, h.relayUser)
	if h.gp != nil {
		env += fmt.Sprintf("GOPROXY=%s\nGOPROXY_PID=%d\n", h.gp.boot, h.goProxyPID())
	}
	envPath := filepath.Join(h.out, "hold.env")
	must(os.WriteFile(envPath, []byte(env), 0o600))
	flag := filepath.Join(h.out, "hold")
	must(os.WriteFile(flag, nil, 0o644))
	limit := time.Duration(envInt("BENCH_HOLD_SECONDS", 1800)) * time.Second
	h.say("holding: %s; remove %s to end (or %v)", envPath, flag, limit)
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(time.Second) {
		if _, err := os.Stat(flag); err != nil {
			break
		}
	}
	h.say("hold ended")
}
