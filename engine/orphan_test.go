package engine

import (
	"bufio"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tcpSocket is one line of /proc/net/tcp or tcp6: its ports, its state
// (hex, as the kernel writes it) and its bytes not acknowledged.
type tcpSocket struct {
	local, remote int
	state         string
	txq           int64
}

// eachTCPSocket calls f for every TCP socket the kernel lists until f says
// stop: the one reader of /proc/net/tcp of the engine's tests.
func eachTCPSocket(f func(s tcpSocket) (more bool)) {
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fd, err := os.Open(name)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fd)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 5 || fs[0] == "sl" {
				continue
			}
			q := strings.SplitN(fs[4], ":", 2)
			tx, _ := strconv.ParseInt(q[0], 16, 64)
			if !f(tcpSocket{local: portOf(fs[1]), remote: portOf(fs[2]), state: fs[3], txq: tx}) {
				fd.Close()
				return
			}
		}
		fd.Close()
	}
}

// pairState is the state and send queue of the gateway's socket on local
// port port towards remote port peer; "" once there is none.
func pairState(port, peer int) (state string, txq int64) {
	eachTCPSocket(func(s tcpSocket) bool {
		if s.local != port || s.remote != peer {
			return true
		}
		state, txq = s.state, s.txq
		return false
	})
	return state, txq
}

func portOf(hexAddr string) int {
	i := strings.LastIndexByte(hexAddr, ':')
	p, err := strconv.ParseInt(hexAddr[i+1:], 16, 32)
	if err != nil {
		return -1
	}
	return int(p)
}

// stalledFetch opens a client with a small receive window that asks a
// Fetch of about 64 KiB (256 records of 1 KiB on orders/0) and reads
// nothing: the answer leaves the gateway's queue and waits in its socket
// (about 31 KiB unsent, the client's window shut). It returns the
// gateway's port and the client's.
func stalledFetch(t *testing.T, env *testEnv) (r *rawConn, port, peer int) {
	t.Helper()
	produceDirect(t, env, 0, 256, 1<<10)
	addr := leaderOf0(t, env)
	_, ps, _ := net.SplitHostPort(addr)
	port, _ = strconv.Atoi(ps)
	r = dialRaw(t, addr, "acme-app", env.keys["acme-app"])
	peer = r.c.LocalAddr().(*net.TCPAddr).Port
	r.fetchMax(64 << 10)
	waitUntil(t, 10*time.Second, "the answer waiting unsent in the gateway's socket", func() bool {
		st, tx := pairState(port, peer)
		return st == "01" && tx > 0
	})
	return r, port, peer
}

// waitReleased waits until the gateway's socket towards peer is gone,
// and fails past bound; it returns how long it took.
func waitReleased(t *testing.T, port, peer int, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		st, tx := pairState(port, peer)
		if st == "" {
			return time.Since(start)
		}
		if time.Since(start) > bound {
			t.Fatalf("the gateway's socket %d -> %d is still held %v later: state %s (hex), %d bytes unsent", port, peer, bound, st, tx)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Issue 33.7: a client socket the gateway closes with bytes unsent, its
// peer reading nothing (or gone), was kept by the kernel in FIN-WAIT-1
// with its send queue, probing a shut window, for minutes (here: over 90
// s). With TCP_USER_TIMEOUT at the write timeout (and two sweeps), it is
// released within that bound. The close here is the idle timeout's, a FIN
// (the gateway's queue is empty: the write timeout's sweep sees nothing).
func TestClosedWithUnsentBytesReleasedWithinWriteTimeout(t *testing.T) {
	skipOnRealKafka(t)
	const wt = 2 * time.Second
	env := newTestEnv(t, "    idle_timeout: 1s\n", WithWriteTimeout(wt), noSplice())
	_, port, peer := stalledFetch(t, env)
	// The idle close: a FIN behind the unsent bytes.
	orphan := false
	waitUntil(t, 10*time.Second, "the gateway's close, its socket left in FIN-WAIT-1 with bytes unsent", func() bool {
		st, tx := pairState(port, peer)
		orphan = orphan || (st == "04" && tx > 0)
		return st != "01"
	})
	if !orphan {
		st, tx := pairState(port, peer)
		t.Fatalf("after the close the gateway's socket is in state %s (hex) with %d bytes unsent: not the orphan this test is about", st, tx)
	}
	bound := env.e.env.KernelWriteTimeout() + 5*time.Second // a margin for a loaded machine
	took := waitReleased(t, port, peer, bound)
	t.Logf("the orphan was released %v after the close (TCP_USER_TIMEOUT %v)", took.Round(time.Millisecond), env.e.env.KernelWriteTimeout())
}

// A client that stops reading while its answer waits in its socket alone
// (the gateway's queue empty: the sweep's write timeout sees nothing) is
// closed by the kernel within the write timeout and two sweeps, said as
// the write timeout's close (B3), its socket released.
func TestStalledReaderOfSocketBytesClosedByKernel(t *testing.T) {
	skipOnRealKafka(t)
	const wt = 2 * time.Second
	env := newTestEnv(t, "", WithWriteTimeout(wt), noSplice())
	r, port, peer := stalledFetch(t, env)
	bound := env.e.env.KernelWriteTimeout() + 5*time.Second
	took := waitReleased(t, port, peer, bound)
	env.waitLog(5*time.Second, "kafka connection closed: the client does not read its answers", "by=kernel")
	_ = r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, r.c)
	if err == nil || os.IsTimeout(err) {
		t.Fatalf("the client was not told of the close: %v", err)
	}
	t.Logf("closed and released %v after its answer stalled (TCP_USER_TIMEOUT %v)", took.Round(time.Millisecond), env.e.env.KernelWriteTimeout())
}
