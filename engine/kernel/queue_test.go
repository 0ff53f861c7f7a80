package kernel

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

func socketpair(t *testing.T) [2]int {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if err := unix.SetNonblock(fd, true); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds
}

func drain(fd int, into []byte, sink []byte) []byte {
	for {
		m, _ := unix.Read(fd, sink)
		if m <= 0 {
			return into
		}
		into = append(into, sink[:m]...)
	}
}

// A direct write costs no allocation; what the socket does not take is
// queued, and the queue drains in order (invariant: order kept).
func TestQueueDirectAndOrder(t *testing.T) {
	fds := socketpair(t)
	var q Queue
	bs := [][]byte{[]byte("head"), bytes.Repeat([]byte("r"), 1000), []byte("tail")}
	sink := make([]byte, 1<<16)
	n := testing.AllocsPerRun(200, func() {
		if err := q.WriteDirect(fds[0], bs); err != nil {
			t.Fatal(err)
		}
		if m, _ := unix.Read(fds[1], sink); m != 1008 {
			t.Fatalf("read %d bytes", m)
		}
	})
	if n != 0 {
		t.Fatalf("%.1f allocations per direct write", n)
	}
	var want []byte
	for i := 0; i < 300; i++ {
		b := bytes.Repeat([]byte{byte(i)}, 1000+i)
		want = append(want, b...)
		q.Push(b)
	}
	if q.Len() != len(want) {
		t.Fatalf("Len %d, want %d", q.Len(), len(want))
	}
	var got []byte
	for q.Len() > 0 {
		if _, err := q.WriteTo(fds[0]); err != nil {
			t.Fatal(err)
		}
		got = drain(fds[1], got, sink)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%d bytes out of %d, not in order", len(got), len(want))
	}
}

// WriteDirect past what the socket takes: the rest is queued, after it,
// in order.
func TestQueueDirectFull(t *testing.T) {
	fds := socketpair(t)
	var q Queue
	big := bytes.Repeat([]byte("x"), 8<<20) // past any socket buffer
	if err := q.WriteDirect(fds[0], [][]byte{[]byte("a"), big, []byte("z")}); err != nil {
		t.Fatal(err)
	}
	if q.Len() == 0 {
		t.Fatal("an 8 MiB write was taken whole by a socket pair")
	}
	sink := make([]byte, 1<<16)
	got := drain(fds[1], nil, sink)
	for q.Len() > 0 {
		if _, err := q.WriteTo(fds[0]); err != nil {
			t.Fatal(err)
		}
		got = drain(fds[1], got, sink)
	}
	want := append(append([]byte("a"), big...), 'z')
	if !bytes.Equal(got, want) {
		t.Fatalf("%d bytes of %d, not in order", len(got), len(want))
	}
}

// Discard and Reset give the chunks back; what is left is the bytes
// pushed, in order.
func TestQueueDiscardReset(t *testing.T) {
	var q Queue
	want := bytes.Repeat([]byte("0123456789"), 20000) // 3 chunks and a bit
	q.Push(want)
	q.Discard(5)
	if q.Len() != len(want)-5 {
		t.Fatalf("after Discard(5): %d bytes, want %d", q.Len(), len(want)-5)
	}
	var got []byte
	q.each(func(b []byte) bool { got = append(got, b...); return true })
	if !bytes.Equal(got, want[5:]) {
		t.Fatal("not the bytes pushed, in order")
	}
	q.Reset()
	if q.Len() != 0 {
		t.Fatal("Reset left bytes")
	}
	// Chunks come back from the pool at their size.
	q.Push([]byte("x"))
	if c := cap(q.bufs[0].B); c < chunkSize {
		t.Fatalf("a chunk of %d bytes, want %d", c, chunkSize)
	}
}

// A write to a socket whose peer is gone is an error (the caller closes).
func TestQueueWriteError(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fds[1])
	defer unix.Close(fds[0])
	var q Queue
	q.Push([]byte("lost"))
	if _, err := q.WriteTo(fds[0]); err == nil {
		t.Fatal("a write to a closed peer gave no error")
	}
}
