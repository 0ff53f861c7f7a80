package hostile

import "syscall"

// dieWithTest makes the gateway get SIGKILL when the test process dies (a
// killed run), so that no gateway outlives it; kept across the shell's
// exec.
func dieWithTest() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
