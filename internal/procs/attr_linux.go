package procs

import "syscall"

// childAttr puts the child in a process group of its own (so a kill reaches
// what it started) and has the kernel SIGKILL it when the kit dies, however
// it dies (Pdeathsig follows the thread that started it; the Go runtime does
// not end its threads while the process runs).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
