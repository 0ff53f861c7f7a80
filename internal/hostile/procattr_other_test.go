//go:build !linux

package hostile

import "syscall"

// dieWithTest: no parent-death signal outside Linux (TestHostile skips there).
func dieWithTest() *syscall.SysProcAttr { return nil }
