package kernel

import (
	"testing"
	"time"
)

// The once-a-second look at a detached socket (engine/conn's tick), in
// both builds (Linux's POLLRDHUP; the portable build's look at what the
// socket reads): a peer open, with a byte unread or none, is not gone; a
// peer that closed, nothing unread, is; a peer that reset is.
func TestPeerGoneSeesACloseAndAReset(t *testing.T) {
	look := func(fd int) bool {
		var ps PollSet
		ps.Add(fd, PeerClosed)
		if err := ps.Poll(0); err != nil {
			t.Fatal(err)
		}
		return PeerGone(fd, ps.Ready(0))
	}
	until := func(what string, fd int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !look(fd); {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not seen gone", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	a, b, fa, _ := tcpPair(t)
	if look(fa) {
		t.Fatal("a peer open, nothing sent: gone")
	}
	if _, err := b.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	var ps PollSet
	ps.Add(fa, Readable)
	if err := ps.Poll(10 * time.Second); err != nil || ps.Ready(0)&Readable == 0 {
		t.Fatalf("a byte sent, the socket does not read: %#x, %v", ps.Ready(0), err)
	}
	if look(fa) {
		t.Fatal("a peer open, a byte unread: gone")
	}
	if _, err := a.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	b.Close()
	until("the peer closed", fa)

	_, b2, fa2, _ := tcpPair(t)
	if err := b2.SetLinger(0); err != nil {
		t.Fatal(err)
	}
	b2.Close() // a reset
	until("the peer reset", fa2)
}
