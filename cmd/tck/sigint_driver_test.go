package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestInterruptLeavesNoDriverAdapter interrupts `tck run` against the
// Python driver adapter (two processes over one data directory) while the
// processes start, during the ES-1 rules and during the races. On top of
// what interruptOnce checks (the exit code, no half report, nothing in the
// run's TMPDIR: the data directory), no process may remain that was given
// a data directory under that TMPDIR.
func TestInterruptLeavesNoDriverAdapter(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: runs the CLI against the Python driver adapter")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	bin := tckBinary(t)
	t.Parallel() // see parallelTests in bin_test.go; the CLI runs from the repository's root
	root := filepath.Dir(filepath.Dir(pkgDir))
	args := []string{"run", "--quiet", "--suite", "eventstore", "--target", "eventstore/process=cmd:python3 examples/eventstore-driver/python/adapter.py"}
	for _, delay := range []time.Duration{300 * time.Millisecond, 1500 * time.Millisecond, 4 * time.Second} {
		t.Run(delay.String(), func(t *testing.T) {
			tmp := t.TempDir()
			interruptOnceIn(t, root, bin, args, delay, tmp)
			deadline := time.Now().Add(5 * time.Second)
			for {
				left := adaptersUnder(tmp)
				if len(left) == 0 {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("driver adapter processes left behind: %v", left)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

// adaptersUnder lists the pids whose environment holds a driver data
// directory under tmp.
func adaptersUnder(tmp string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	needle := []byte("TCK_DATA_DIR=" + tmp)
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, needle) {
			out = append(out, filepath.Base(filepath.Dir(p)))
		}
	}
	return out
}
