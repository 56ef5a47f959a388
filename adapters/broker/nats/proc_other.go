//go:build !linux

package nats

import "syscall"

// childAttr: outside Linux there is no parent-death signal; the leftovers
// registry kills the child on every exit path the kit sees.
func childAttr() *syscall.SysProcAttr { return nil }
