//go:build linux

package main

import "syscall"

// dieWith makes a child process get sig when the harness dies, so that no
// server or load generator outlives a killed run.
func dieWith(sig syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: sig}
}
