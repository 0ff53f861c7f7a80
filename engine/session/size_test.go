package session

import (
	"testing"
	"unsafe"
)

// Issue 35.3: an idle authenticated pair's bytes. A Client is allocated
// in Go's 704-byte size class (its small fields together, no buffer of its
// own: the gateway's own answers are built in the loop's scratch); a field
// more that passes the class costs 64 bytes per connection.
func TestClientFitsItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(Client{}); n > 704 {
		t.Fatalf("a Client is %d bytes: past the 704-byte size class (768 per connection)", n)
	}
}
