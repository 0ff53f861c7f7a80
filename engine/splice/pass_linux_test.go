//go:build linux

package splice

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/flexway/flexway/engine/kernel"
	"golang.org/x/sys/unix"
)

// fakeStream is a frame of one partition's records then one unit: the
// records pass untouched, the unit is rewritten ("UNIT" becomes "U!").
type fakeStream struct {
	records int
	unit    []byte
	fed     bool
	out     [][]byte
}

func (s *fakeStream) RecordsLeft() int { return s.records }
func (s *fakeStream) SkipRecords(n int) bool {
	if n > s.records {
		return false
	}
	s.records -= n
	return true
}
func (s *fakeStream) Remaining() int {
	if s.fed {
		return s.records
	}
	return s.records + len(s.unit)
}
func (s *fakeStream) Pending() int { return 0 }
func (s *fakeStream) Feed(chunk []byte) (int, error) {
	if s.records > 0 {
		return 0, errors.New("fed inside records")
	}
	if len(chunk) < len(s.unit) {
		return 0, nil
	}
	if !bytes.Equal(chunk[:len(s.unit)], s.unit) {
		return 0, errors.New("not the unit")
	}
	s.fed = true
	s.out = [][]byte{[]byte("U!")}
	return len(s.unit), nil
}
func (s *fakeStream) Slices() [][]byte { o := s.out; s.out = nil; return o }
func (s *fakeStream) Done() bool       { return s.fed && s.records == 0 }

// ends writes to the destination's fd and records what the pass said.
type ends struct {
	pp       *Pipe
	dst      int
	room     int
	spliced  int
	fulls    int
	roomOuts int
	failed   string
}

type fdWriter int

func (w fdWriter) Write(b []byte) error { _, err := unix.Write(int(w), b); return err }

func (e *ends) More(left int) bool { return left > 0 }
func (e *ends) Spliced(n int)      { e.spliced += n }
func (e *ends) PipeFull(rest int) {
	e.fulls++
	_ = e.pp.ReadOut(rest, fdWriter(e.dst))
}
func (e *ends) Room(int) int { return e.room }
func (e *ends) RoomOut()     { e.roomOuts++ }
func (e *ends) UnitOut(sl [][]byte) {
	for _, b := range sl {
		_ = fdWriter(e.dst).Write(b)
	}
}
func (e *ends) UnitTaken(int)     {}
func (e *ends) DestClear() bool   { return true }
func (e *ends) Failed(why string) { e.failed = why }

// tcp returns a connected pair: the fd of a (non-blocking) and b.
func tcp(t *testing.T) (fd int, peer net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() { c, _ := ln.Accept(); acc <- c }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p := <-acc
	t.Cleanup(func() { c.Close(); p.Close() })
	raw, _ := c.(*net.TCPConn).SyscallConn()
	_ = raw.Control(func(x uintptr) { fd = int(x) })
	return fd, p
}

func run(t *testing.T, short bool, room int) (*ends, []byte, []byte) {
	pp, err := NewPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pp.Close()
	pp.Short.Store(short)
	src, srcPeer := tcp(t)
	dst, dstPeer := tcp(t)
	records := bytes.Repeat([]byte("r"), 200<<10)
	if _, err := srcPeer.Write(append(append([]byte(nil), records...), "UNIT"...)); err != nil {
		t.Fatal(err)
	}
	st := &fakeStream{records: len(records), unit: []byte("UNIT")}
	e := &ends{pp: pp, dst: dst, room: room}
	deadline := time.Now().Add(30 * time.Second)
	for !st.Done() && e.roomOuts == 0 && e.failed == "" {
		pp.Pass(st, e, src, dst)
		if time.Now().After(deadline) {
			t.Fatalf("the pass did not end: %d records left", st.records)
		}
	}
	want := append(records, "U!"...)
	if e.roomOuts > 0 {
		return e, want, nil
	}
	got := make([]byte, len(want))
	_ = dstPeer.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(dstPeer, got); err != nil {
		t.Fatal(err)
	}
	return e, want, got
}

// A partition's records and the unit after them arrive whole and in order.
func TestPassRecordsThenUnit(t *testing.T) {
	e, want, got := run(t, false, -1)
	if e.failed != "" || !bytes.Equal(got, want) || e.spliced != 200<<10 {
		t.Fatalf("failed %q, spliced %d, %d bytes of %d in order: %v", e.failed, e.spliced, len(got), len(want), bytes.Equal(got, want))
	}
}

// A destination that takes half of what the pipe holds: the rest is read
// out and written as any bytes, in order; the pipe is empty after.
func TestPassPipeFull(t *testing.T) {
	e, want, got := run(t, true, -1)
	if e.fulls == 0 || !bytes.Equal(got, want) {
		t.Fatalf("%d pipe-fulls, %d bytes of %d in order: %v", e.fulls, len(got), len(want), bytes.Equal(got, want))
	}
}

// A destination without room (one byte under kernel.RoomMin): the pass
// ends before splicing anything; at RoomMin it passes, RoomMin at a time.
func TestPassRoomOut(t *testing.T) {
	e, _, _ := run(t, false, kernel.RoomMin-1)
	if e.roomOuts != 1 || e.spliced != 0 {
		t.Fatalf("%d room-outs, %d spliced", e.roomOuts, e.spliced)
	}
	e, want, got := run(t, false, kernel.RoomMin)
	if e.roomOuts != 0 || e.spliced != 200<<10 || !bytes.Equal(got, want) {
		t.Fatalf("room %d: %d room-outs, %d spliced, %d bytes of %d in order: %v", kernel.RoomMin, e.roomOuts, e.spliced, len(got), len(want), bytes.Equal(got, want))
	}
}
