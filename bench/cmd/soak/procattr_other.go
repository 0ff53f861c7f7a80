//go:build !linux

// The gateway's process attributes elsewhere: none (the soak samples
// /proc, so it runs on Linux).
package main

import "syscall"

func dieWith(sig syscall.Signal) *syscall.SysProcAttr { return nil }
