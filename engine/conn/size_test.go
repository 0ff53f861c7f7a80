package conn

import (
	"testing"
	"unsafe"
)

// Issue 35.3: an idle pair holds two Conns (invariant 56). A Conn is
// allocated in Go's 208-byte size class (a Write's vector is its loop's,
// its addresses gnet's); a field more that passes it costs 16 bytes per
// socket.
func TestConnFitsItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(Conn{}); n > 208 {
		t.Fatalf("a Conn is %d bytes: past the 208-byte size class (224 per socket)", n)
	}
}

// A Conn keeps no copy of its addresses: they are gnet's while attached
// and read from the socket while detached, the same either way.
func TestAddrsAttachedAndDetached(t *testing.T) {
	s := startServer(t, 1<<20, 256<<10)
	nc, o := s.accept(t)
	look := func(when string) {
		t.Helper()
		var local, remote string
		onLoop(t, o, func() {
			if a := o.c.LocalAddr(); a != nil {
				local = a.String()
			}
			if a := o.c.RemoteAddr(); a != nil {
				remote = a.String()
			}
		})
		if local != nc.RemoteAddr().String() || remote != nc.LocalAddr().String() {
			t.Fatalf("%s: local %q remote %q, want %q and %q", when, local, remote, nc.RemoteAddr(), nc.LocalAddr())
		}
	}
	look("attached")
	onLoop(t, o, func() { o.c.Pause(Budget) })
	if !paused(t, o) {
		t.Fatal("not detached after Pause and a safe point")
	}
	look("detached")
	onLoop(t, o, func() { o.c.Resume(Budget) })
	eventually(t, "attached again", func() bool { return !paused(t, o) })
	look("attached again")
}
