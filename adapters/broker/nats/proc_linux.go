package nats

import "syscall"

// childAttr makes the kernel kill a child nats-server (SIGKILL) when the
// kit dies, however it dies. Pdeathsig follows the thread that started the
// child; the Go runtime does not end its threads while the process runs.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
