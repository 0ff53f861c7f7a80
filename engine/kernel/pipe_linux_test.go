//go:build linux && !flexway_portable

package kernel

import (
	"bytes"
	"testing"
)

// Bytes spliced from a socket into the pipe and out to another socket
// arrive whole and in order; an empty source moves nothing.
func TestPipeSplicesSocketToSocket(t *testing.T) {
	p, err := NewPipe(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Size() < 64<<10 {
		t.Fatalf("pipe of %d bytes", p.Size())
	}
	srcW, _, _, srcR := tcpPair(t)                 // written at srcW, spliced from its peer's fd srcR
	_, dstR, dstFd, _ := tcpPair(t)                // spliced to dstFd, read at its peer dstR
	want := bytes.Repeat([]byte("records!"), 8192) // 64 KiB
	if _, err := srcW.Write(want); err != nil {
		t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 1<<16)
	for len(got) < len(want) {
		n := p.From(srcR, len(want)-len(got))
		if n > 0 {
			if rest := p.To(dstFd, n); rest != 0 {
				t.Fatalf("%d bytes left in the pipe", rest)
			}
		}
		m, err := dstR.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:m]...)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("spliced bytes differ")
	}
	if n := p.From(srcR, 1024); n != 0 {
		t.Fatalf("an empty socket gave %d bytes", n)
	}
}

// Room: the send buffer's size on an idle socket, next to nothing once
// the peer reads nothing and writes fill it.
func TestRoomFallsWhenTheBufferFills(t *testing.T) {
	_, _, fd, _ := tcpPair(t) // the peer never reads
	before := Room(fd)
	if before <= 0 {
		t.Fatalf("room %d on an idle socket", before)
	}
	var q Queue
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for i := 0; i < 1024; i++ { // 64 MiB at most: the buffers fill first
		q.Push(chunk)
		if _, err := q.WriteTo(fd); err != nil {
			t.Fatal(err)
		}
		if q.Len() > 0 {
			break
		}
	}
	if q.Len() == 0 {
		t.Fatal("64 MiB taken by a socket whose peer reads nothing")
	}
	if after := Room(fd); after > before/8 {
		t.Fatalf("room %d of %d once the socket took no more", after, before)
	}
	q.Reset()
}
