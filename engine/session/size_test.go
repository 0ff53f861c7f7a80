package session

import (
	"testing"
	"time"
	"unsafe"
)

// Issue 35.3: an idle authenticated pair's bytes (invariant 56). A Client
// is allocated in Go's 512-byte size class and its broker connection's
// upstreamConn in the 80-byte one (small fields together, moments as
// 8-byte instants, a day/month budget's handles made when one applies, no
// buffer of their own: the gateway's own answers are built in the loop's
// scratch); a field more that passes a class costs the next class's bytes
// per connection.
func TestClientFitsItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(Client{}); n > 512 {
		t.Fatalf("a Client is %d bytes: past the 512-byte size class (576 per connection)", n)
	}
	if n := unsafe.Sizeof(upstreamConn{}); n > 80 {
		t.Fatalf("an upstreamConn is %d bytes: past the 80-byte size class (96 per broker connection)", n)
	}
}

// An instant is a time.Time's monotonic reading in 8 bytes: none is the
// zero time both ways, a moment comes back Equal to itself (monotonic
// readings compared), and its age is the time since it.
func TestInstantKeepsTheMonotonicReading(t *testing.T) {
	if i := instantOf(time.Time{}); !i.IsZero() || !i.Time().IsZero() {
		t.Fatalf("the zero time: instant %d, back %v", i, i.Time())
	}
	if nowInstant().IsZero() || instantOf(epoch).IsZero() {
		t.Fatal("a moment read as none")
	}
	then := time.Now().Add(-1500 * time.Millisecond)
	i := instantOf(then)
	if back := i.Time(); !back.Equal(then) {
		t.Fatalf("%v came back as %v", then, back)
	}
	now := time.Now()
	if age, want := i.age(now), now.Sub(then); age != want {
		t.Fatalf("age %v, want %v", age, want)
	}
	if a, b := nowInstant(), nowInstant(); b < a {
		t.Fatalf("instants went back: %d then %d", a, b)
	}
}
