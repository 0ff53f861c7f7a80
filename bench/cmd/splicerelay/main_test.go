package main

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"
)

// A client's bytes reach the target and the target's answer comes back
// whole, through the relay, and each side's end of writing is passed on.
func TestRelayBothWaysAndHalfClose(t *testing.T) {
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	// The target reads everything until the client's half close, then
	// sends the same bytes back and closes.
	got := make(chan []byte, 1)
	go func() {
		c, err := target.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		data, _ := io.ReadAll(c)
		got <- data
		_, _ = c.Write(data)
	}()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go serve(ln, target.Addr().String())

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	payload := make([]byte, 4<<20)
	rand.Read(payload)
	go func() {
		_, _ = c.Write(payload)
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	back, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	if seen := <-got; !bytes.Equal(seen, payload) {
		t.Fatalf("the target received %d bytes, want the %d sent", len(seen), len(payload))
	}
	if !bytes.Equal(back, payload) {
		t.Fatalf("the client received %d bytes back, want %d", len(back), len(payload))
	}
}

func TestParseMap(t *testing.T) {
	p, err := parseMap("127.0.0.1:1=127.0.0.1:2, 127.0.0.1:3=127.0.0.1:4")
	if err != nil || len(p) != 2 || p[1] != [2]string{"127.0.0.1:3", "127.0.0.1:4"} {
		t.Fatalf("parseMap: %v %v", p, err)
	}
	for _, bad := range []string{"", "127.0.0.1:1", "=127.0.0.1:2", "127.0.0.1:1="} {
		if _, err := parseMap(bad); err == nil {
			t.Errorf("parseMap(%q): no error", bad)
		}
	}
}
