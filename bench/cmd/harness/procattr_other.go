//go:build !linux

package main

import "syscall"

// dieWith: no parent-death signal outside Linux; the harness stops its
// children itself when it ends normally.
func dieWith(sig syscall.Signal) *syscall.SysProcAttr { return nil }
