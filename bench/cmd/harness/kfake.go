package main

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The table against kfake (BENCH_BROKER=kfake, issue 35.1): instead of
// bench/run's Apache Kafka broker, franz-go's in-memory broker
// (bench/cmd/kfakesrv), a fresh process for every run of every path, since
// kfake keeps every record in memory and slows as it grows (as
// bench/roundtrip does). One kfakesrv runs at a time, where the path's
// broker listener would be:
//
//   - direct and the gateway (its upstream): -broker (29192), no SASL;
//   - the relay: -relay-target (29195) advertising -relay (29196), SASL
//     PLAIN as the broker's user (as the RELAY listener: the relay's
//     clients authenticate as the gateway's do);
//   - the Go proxy: -goproxy-target (29198) advertising itself, SASL as
//     the relay's.
//
// kfake serves SaslHandshake v1 only and librdkafka will not authenticate
// without v0 in the broker's range, so kcat's runs (kcat.go) go to the
// relay's and the Go proxy's kfakesrv without SASL (noSASL). A run that
// reads (the consumers, the large fetches) first fills its fresh broker
// with what it reads (franz-go, acks=1, not measured): kfakeFill.

const (
	brokerKafka = "kafka"
	brokerKfake = "kfake"
)

// kfakeProc is the kfakesrv of the current run.
type kfakeProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	n    int // kfakesrv started so far (their logs' numbers)
}

// isKfake says whether the table runs against kfake.
func (h *harness) isKfake() bool { return h.brokerKind == brokerKfake }

// kfakeParts are the parts that can run against kfake: the relaying table
// and the large fetches (the others start gateways of their own on one
// long-lived broker).
var kfakeParts = map[string]bool{"table": true, "bigfetch": true, "issue": true, "produce": true}

// checkKfakeParts dies when BENCH_PARTS names a part kfake cannot run.
func checkKfakeParts(parts map[string]bool) error {
	for p := range parts {
		if !kfakeParts[p] {
			return fmt.Errorf("BENCH_BROKER=kfake runs the parts table and bigfetch (and issue, produce), not %q", p)
		}
	}
	return nil
}

// kfakeArgs are kfakesrv's arguments for path's broker, and the SASL user
// its clients authenticate as ("": none). noSASL: without SASL whatever
// the path (kcat's runs).
func (h *harness) kfakeArgs(path string, noSASL bool) (args []string, user string) {
	port := func(addr string) string {
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			die("kfake: %q: %v", addr, err)
		}
		return p
	}
	args = []string{filepath.Join(h.bin, "kfakesrv"), "-partitions", "3"}
	switch path {
	case relay:
		args = append(args, "-port", port(h.relayTarget), "-advertise", h.relayBoot)
		user = h.relayUser
	case goproxy:
		args = append(args, "-port", port(h.gp.target))
		user = h.relayUser
	default: // direct, gateway
		args = append(args, "-port", port(h.broker))
	}
	if noSASL {
		user = ""
	}
	if user != "" {
		args = append(args, "-sasl-user", user)
	}
	return args, user
}

// kfakeAddr is where path's kfakesrv listens.
func (h *harness) kfakeAddr(path string) string {
	switch path {
	case relay:
		return h.relayTarget
	case goproxy:
		return h.gp.target
	}
	return h.broker
}

// freshKfake stops the running kfakesrv and starts the one of path, empty,
// and waits until it accepts; h.brokerPID becomes its pid (the broker's
// CPU of the runs).
func (h *harness) freshKfake(path string, noSASL bool) {
	h.stopKfake()
	if h.kf == nil {
		h.kf = &kfakeProc{}
	}
	h.kf.n++
	args, user := h.kfakeArgs(path, noSASL)
	log := filepath.Join(h.out, "logs", fmt.Sprintf("kfakesrv-%03d-%s.log", h.kf.n, path))
	var env []string
	if user != "" {
		env = []string{"KFAKESRV_SASL_PASSWORD=" + h.relayPass}
	}
	h.kf.cmd, h.kf.done = h.startHopEnv("kfakesrv ("+path+")", log, h.kfakeAddr(path), 15*time.Second, env, args...)
	h.brokerPID = h.kf.cmd.Process.Pid
}

// stopKfake ends the running kfakesrv, if any.
func (h *harness) stopKfake() {
	if h.kf == nil || h.kf.cmd == nil {
		return
	}
	_ = h.kf.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-h.kf.done:
	case <-time.After(10 * time.Second):
		_ = h.kf.cmd.Process.Kill()
		<-h.kf.done
	}
	h.kf.cmd = nil
	h.brokerPID = 0
}

// kfakeFill is what a run of scenario sc reads, which its fresh broker
// must hold first: the topic (as its clients name it) and the records of
// 1 KiB; n 0: nothing (a producer's run).
func (h *harness) kfakeFill(sc string) (topic string, n int) {
	switch sc {
	case scConsume, scFranzConsume:
		return "perf", h.records
	case h.scBigFetch(), h.scBigFetchJava():
		return "big", h.bigMiB << 10
	}
	return "", 0
}

// kfakeBefore readies the broker of a run of sc on path: a fresh kfakesrv,
// filled with what the run reads. The fill goes straight to the kfakesrv
// for direct and the gateway (the gateway's topic is the tenant's,
// acme.<topic>), through the relay or the Go proxy (its SASL) for theirs;
// it is not measured (measure reads the counters after it).
func (h *harness) kfakeBefore(sc, path string) {
	h.freshKfake(path, sc == scKcatProduce)
	topic, n := h.kfakeFill(sc)
	if n == 0 {
		return
	}
	via := path
	if path == gateway {
		via, topic = direct, "acme."+topic
	}
	t0 := time.Now()
	if _, err := h.loadgen(via, "produce", n, 1024, 0, 5*time.Millisecond,
		"-topic", topic, "-acks", "1", "-timeout", "30m"); err != nil {
		die("kfake: filling %s for %s (%s): %v", topic, sc, path, err)
	}
	h.say("  kfake: %s filled with %d records of 1 KiB for %s, %.1f s", topic, n, path, time.Since(t0).Seconds())
}

// kfakeVersion is the kfake module's version in kfakesrv's build
// (kfakesrv -version), read once.
func (h *harness) kfakeVersion() string {
	if h.kfakeVer == "" {
		out, err := exec.Command(filepath.Join(h.bin, "kfakesrv"), "-version").Output()
		h.kfakeVer = strings.TrimSpace(string(out))
		if err != nil || h.kfakeVer == "" {
			h.kfakeVer = "(unknown version)"
		}
	}
	return h.kfakeVer
}

// brokerLine names the broker the table ran against, for the tables'
// first line and env.txt.
func (h *harness) brokerLine() string {
	if h.isKfake() {
		return "Broker: kfake " + h.kfakeVersion() + " (franz-go's in-memory broker, bench/cmd/kfakesrv), NOT Apache Kafka: " +
			"a fresh kfakesrv for every run of every path (a reading run's filled first, not measured), 3 partitions; " +
			"the relay's with SASL PLAIN (kcat's: without, kfake serves no SaslHandshake v0)."
	}
	return "Broker: Apache Kafka " + envStr("KAFKA_VERSION", "unknown") + " (single-node KRaft, started by bench/run)."
}
