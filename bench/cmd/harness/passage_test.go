package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two requests of a pair (client fd 22, broker fd 25) as perf script
// prints them: the first read from the client in two parts (a read, then
// a splice into a pipe, fd 26, and out of it), the second's tail peeked,
// written, then consumed (as the gateway does a partition's head); each
// answer read and written. A failed read and another socket's write are
// not the pair's moves.
const passageTrace = `
 flexway 10 [001] 100.000000: syscalls:sys_enter_read: fd: 0x00000016, buf: 0x1, count: 0x00004000
 flexway 10 [001] 100.000010: syscalls:sys_exit_read: 0x4000
 flexway 10 [001] 100.000020: syscalls:sys_enter_recvfrom: fd: 0x00000016, ubuf: 0x1, size: 0x00000100, flags: 0x00000042, addr: 0x0, addr_len: 0x0
 flexway 10 [001] 100.000030: syscalls:sys_exit_recvfrom: 0x100
 flexway 10 [001] 100.000040: syscalls:sys_enter_writev: fd: 0x00000019, vec: 0x1, vlen: 0x00000001
 flexway 10 [001] 100.000050: syscalls:sys_exit_writev: 0x4000
 flexway 10 [001] 100.000100: syscalls:sys_enter_splice: fd_in: 0x00000016, off_in: 0x0, fd_out: 0x0000001b, off_out: 0x0, len: 0x10000, flags: 0x3
 flexway 10 [001] 100.000200: syscalls:sys_exit_splice: 0x10000
 flexway 11 [000] 100.000250: syscalls:sys_enter_write: fd: 0x0000000f, buf: 0x1, count: 0x8
 flexway 11 [000] 100.000260: syscalls:sys_exit_write: 0x8
 flexway 10 [001] 100.000300: syscalls:sys_enter_splice: fd_in: 0x0000001a, off_in: 0x0, fd_out: 0x00000019, off_out: 0x0, len: 0x10000, flags: 0x3
 flexway 10 [001] 100.000500: syscalls:sys_exit_splice: 0x10000
 flexway 10 [001] 100.002500: syscalls:sys_enter_read: fd: 0x00000019, buf: 0x1, count: 0x00004000
 flexway 10 [001] 100.002510: syscalls:sys_exit_read: 0x40
 flexway 10 [001] 100.002520: syscalls:sys_enter_writev: fd: 0x00000016, vec: 0x1, vlen: 0x00000001
 flexway 10 [001] 100.002540: syscalls:sys_exit_writev: 0x40
 flexway 10 [001] 100.003000: syscalls:sys_enter_read: fd: 0x00000016, buf: 0x1, count: 0x00004000
 flexway 10 [001] 100.003010: syscalls:sys_exit_read: 0x200
 flexway 10 [001] 100.003020: syscalls:sys_enter_read: fd: 0x00000016, buf: 0x1, count: 0x00004000
 flexway 10 [001] 100.003030: syscalls:sys_exit_read: 0xfffffffffffffff5
 flexway 10 [001] 100.003035: syscalls:sys_enter_recvfrom: fd: 0x00000016, ubuf: 0x1, size: 0x00000003, flags: 0x00000042, addr: 0x0, addr_len: 0x0
 flexway 10 [001] 100.003040: syscalls:sys_exit_recvfrom: 0x3
 flexway 10 [001] 100.003100: syscalls:sys_enter_writev: fd: 0x00000019, vec: 0x1, vlen: 0x00000001
 flexway 10 [001] 100.003110: syscalls:sys_exit_writev: 0x203
 flexway 10 [001] 100.003120: syscalls:sys_enter_read: fd: 0x00000016, buf: 0x1, count: 0x00000003
 flexway 10 [001] 100.003130: syscalls:sys_exit_read: 0x3
 flexway 10 [001] 100.004110: syscalls:sys_enter_read: fd: 0x00000019, buf: 0x1, count: 0x00004000
 flexway 10 [001] 100.004120: syscalls:sys_exit_read: 0x40
 flexway 10 [001] 100.004130: syscalls:sys_enter_writev: fd: 0x00000016, vec: 0x1, vlen: 0x00000001
 flexway 10 [001] 100.004150: syscalls:sys_exit_writev: 0x40
`

func TestPassageSplitsRequests(t *testing.T) {
	evs := moves(bufio.NewScanner(strings.NewReader(passageTrace)), 22, 25)
	if got := len(evs); got != 13 {
		t.Fatalf("%d moves, want 13 (a failed read and another socket's write are not moves)", got)
	}
	s := split(evs)
	want := func(name string, got []float64, ms ...float64) {
		t.Helper()
		if len(got) != len(ms) {
			t.Fatalf("%s: %v, want %v", name, got, ms)
		}
		for i := range ms {
			if d := got[i] - ms[i]; d > 1e-6 || d < -1e-6 {
				t.Fatalf("%s: %v, want %v", name, got, ms)
			}
		}
	}
	// Request 1: last byte in at .000200 (the splice in), out at .000500.
	// Request 2: its tail peeked at .003040, out at .003110 (consumed
	// after: not an arrival).
	want("added", s.added, 0.3, 0.07)
	want("broker", s.broker, 2.01, 1.01)
	want("answer", s.answer, 0.03, 0.03) // at each call's exit
	// The client's round trips: the first spans request 1's broker window
	// (2.01 ms of its 2.6); the second ends before request 2's answer
	// came (no request of its own); the third is request 2's, its times
	// late by the hook (its start after the request went out): 1.01 ms of
	// its 1.2.
	file := filepath.Join(t.TempDir(), "e2e.txt")
	if err := os.WriteFile(file, []byte("100000100000 2600000\n100003000000 500000\n100003150000 1200000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.roundTrips(file)
	want("trips", s.trips, 2.6, 0.5, 1.2)
	want("path", s.path, 0.59, 0.19)
}
