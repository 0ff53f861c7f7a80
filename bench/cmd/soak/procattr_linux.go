//go:build linux

// The gateway's process attributes on Linux: it dies with the soak.
package main

import "syscall"

// dieWith makes a child process get sig when the soak dies, so that no
// gateway outlives a killed run.
func dieWith(sig syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: sig}
}
