package kernel

import (
	"net"
	"testing"
)

// tcpPair is two connected TCP sockets' fds (splice(2) reads a TCP socket).
func tcpPair(t *testing.T) (a, b *net.TCPConn, fa, fb int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan *net.TCPConn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- nil
			return
		}
		done <- c.(*net.TCPConn)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a, b = c.(*net.TCPConn), <-done
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	fd := func(c *net.TCPConn) int {
		raw, _ := c.SyscallConn()
		var f int
		_ = raw.Control(func(x uintptr) { f = int(x) })
		return f
	}
	return a, b, fd(a), fd(b)
}
