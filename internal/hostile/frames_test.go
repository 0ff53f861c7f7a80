package hostile

// The attacks on the framing: sizes and bytes that are no Kafka, bytes one
// at a time, connections cut in the middle of a request.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// closeWithin is how soon a connection the gateway must close is closed:
// at once, give or take a loaded machine.
const closeWithin = 10 * time.Second

// sizeFrame is a frame head announcing size bytes, then body.
func sizeFrame(size uint32, body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, size), body...)
}

// garbage is what a peer that speaks no Kafka sends; each must close its
// connection. authed: sent after a good authentication.
var garbage = []struct {
	what   string
	authed bool
	b      []byte
}{
	{"negative size", false, sizeFrame(0xFFFFFFFF, []byte{0, 18, 0, 0})},
	{"size 2 GiB", false, sizeFrame(0x7FFFFFFF, bytes.Repeat([]byte{7}, 1024))},
	{"64 KiB + 1 before authentication", false, sizeFrame(64<<10+1, bytes.Repeat([]byte{7}, 4096))},
	{"TLS ClientHello on plaintext", false, append([]byte{0x16, 3, 1, 2, 0, 1, 0, 1, 0xfc, 3, 3}, bytes.Repeat([]byte{1}, 500)...)},
	{"HTTP on the Kafka port", false, []byte("GET / HTTP/1.1\r\nHost: flexway\r\n\r\n")},
	{"size 0", false, sizeFrame(0, nil)},
	{"unknown API key", false, sizeFrame(12, []byte{0x7f, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0})},
	{"random bytes", false, bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef, 0x01, 0x02}, 200)},
	{"16 MiB + 1 after authentication", true, sizeFrame(16<<20+1, bytes.Repeat([]byte{7}, 4096))},
	{"negative size after authentication", true, sizeFrame(0x80000000, nil)},
	{"unknown API key after authentication", true, sizeFrame(12, []byte{0x7f, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0})},
	{"a header cut short after authentication", true, sizeFrame(3, []byte{0, 3, 0})},
}

// framing sends every garbage case on a connection of its own, all at
// once, rounds times; each connection must be closed within closeWithin.
func framing(g *gateway, full bool) error {
	rounds := 2
	if full {
		rounds = 20
	}
	for i := 0; i < rounds; i++ {
		errs := parallel(len(garbage), func(j int) error {
			c := garbage[j]
			r, err := connect(g, c.authed)
			if err != nil {
				return fmt.Errorf("%s: %w", c.what, err)
			}
			defer r.Close()
			_ = r.write(c.b) // a write refused by a close already made is the bound held
			if err := r.closedWithin(closeWithin); err != nil {
				return fmt.Errorf("%s: %w", c.what, err)
			}
			return nil
		})
		if errs != nil {
			return errs
		}
		pace() // acme's connections: within max_connection_rate_per_tenant
	}
	return nil
}

// connect dials the bootstrap port, authenticated as acme-app when authed.
func connect(g *gateway, authed bool) (*raw, error) {
	if authed {
		return dialAuthed(g.kafka(), "acme-app", g.keys["acme-app"])
	}
	return dial(g.kafka())
}

// pace keeps one tenant's new connections under the default
// max_connection_rate_per_tenant (100 a second) when a round opens a few.
func pace() { time.Sleep(150 * time.Millisecond) }

// parallel runs f(0..n-1) at once and joins their errors.
func parallel(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// trickle writes b one byte every `every` until done or a write fails.
func trickle(r *raw, b []byte, every time.Duration) {
	for i := range b {
		if r.write(b[i:i+1]) != nil {
			return
		}
		time.Sleep(every)
	}
}

// slowBytes: connections that send their first request 1 byte per 100 ms.
// Before authentication, a 250-byte ApiVersions (25 s) is cut by
// auth_timeout (10 s); after it, a Metadata request trickled whole is
// answered.
func slowBytes(g *gateway, full bool) error {
	n := 4
	if full {
		n = 32
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName = string(bytes.Repeat([]byte{'s'}, 200))
	av.ClientSoftwareVersion = "1"
	slow := frame(av, 1)
	errs := parallel(n+1, func(i int) error {
		if i == n {
			return slowAuthed(g)
		}
		r, err := dial(g.kafka())
		if err != nil {
			return err
		}
		defer r.Close()
		go trickle(r, slow, 100*time.Millisecond)
		return r.closedWithin(10*time.Second + closeWithin)
	})
	return errs
}

// slowAuthed trickles a Metadata request after authentication; it must be
// answered, "orders" in it.
func slowAuthed(g *gateway) error {
	r, err := dialAuthed(g.kafka(), "acme-app", g.keys["acme-app"])
	if err != nil {
		return err
	}
	defer r.Close()
	r.corr++
	trickle(r, frame(metadata("orders"), r.corr), 100*time.Millisecond)
	corr, body, err := r.next()
	if err != nil {
		return fmt.Errorf("a trickled Metadata after authentication: %w", err)
	}
	if corr != r.corr || !bytes.Contains(body, []byte("orders")) {
		return fmt.Errorf("a trickled Metadata after authentication: answer %d without orders", corr)
	}
	return nil
}

// resets: connections cut mid-request, by a half-close or a reset, before
// and after authentication; the ones left to the gateway must be closed.
func resets(g *gateway, full bool) error {
	rounds := 10
	if full {
		rounds = 100
	}
	md := frame(metadata("orders"), 1)
	pr := frame(produce("orders", 0, 4<<10, 8), 1)
	cases := []func() error{
		func() error { return cut(g, true, md[:len(md)/2], false) },
		func() error { return cut(g, true, pr[:len(pr)/2], true) },
		func() error { return cut(g, true, md, true) },
		func() error { return cut(g, true, pr, false) },
		func() error { return cut(g, false, frame(kmsg.NewPtrSASLHandshakeRequest(), 1)[:9], true) },
	}
	for i := 0; i < rounds; i++ {
		if err := parallel(len(cases), func(j int) error { return cases[j]() }); err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
		pace()
	}
	return nil
}

// cut writes b then resets the connection (rst), or half-closes it and
// waits for the gateway to close its side.
func cut(g *gateway, authed bool, b []byte, rst bool) error {
	r, err := connect(g, authed)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.write(b); err != nil {
		return err
	}
	if rst {
		r.reset()
		return nil
	}
	if err := r.c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		return err
	}
	if err := r.closedWithin(closeWithin); err != nil {
		return fmt.Errorf("half-closed after %d bytes: %w", len(b), err)
	}
	return nil
}
