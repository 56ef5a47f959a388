//go:build !linux

package procs

import "syscall"

// childAttr: outside Linux there is no parent-death signal; the leftovers
// registry kills the group on every exit path the kit sees.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
