package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/containers"
)

// TestInterruptLeavesNoService interrupts `tck run` against consumer
// services run as processes (the Go reference, built once, and the Python
// reference) at several points: before the build finished, while the
// replicas start, deep into the crash rules. After each, on top of what
// interruptOnce checks (the exit code, no half report, nothing in the run's
// TMPDIR: the build directory and every rule's data directory), no process
// may remain that was given one of the run's data directories.
func TestInterruptLeavesNoService(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: runs the CLI against consumer services")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	bin := tckBinary(t)
	t.Parallel() // see parallelTests in bin_test.go; the CLI runs from the repository's root
	root := filepath.Dir(filepath.Dir(pkgDir))
	goRef := []string{"run", "--quiet", "--suite", "consumer", "--target", "consumer/process=cmd:go run ./examples/consumer-service/go"}
	pyRef := []string{"run", "--quiet", "--suite", "consumer", "--target", "consumer/process-python"}
	runs := []struct {
		args  []string
		delay time.Duration
	}{
		{goRef, 300 * time.Millisecond}, {goRef, 2 * time.Second}, {goRef, 5 * time.Second}, {goRef, 9 * time.Second},
		{pyRef, 1500 * time.Millisecond}, {pyRef, 6 * time.Second},
	}
	if containers.Available(context.Background()) == nil {
		// The same reference as a container: its containers must go too
		// (interruptOnce checks by the kit's pid label).
		const image = "onceproof/consumer-service-go:sigint-test"
		if out, err := exec.Command(filepath.Join(root, "examples/consumer-service/go/build-image.sh"), image).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", image, err, out)
		}
		ctr := []string{"run", "--quiet", "--suite", "consumer", "--target", "consumer/process=container:" + image}
		runs = append(runs, struct {
			args  []string
			delay time.Duration
		}{ctr, 2 * time.Second}, struct {
			args  []string
			delay time.Duration
		}{ctr, 7 * time.Second})
	} else {
		t.Log("Docker is not available: no container service interrupted")
	}
	for _, r := range runs {
		name := strings.TrimPrefix(r.args[len(r.args)-1], "consumer/") + "@" + r.delay.String()
		t.Run(name, func(t *testing.T) {
			interruptService(t, root, bin, r.args, r.delay)
		})
	}
}

func interruptService(t *testing.T, dir, bin string, args []string, delay time.Duration) {
	tmp := t.TempDir()
	interruptOnceIn(t, dir, bin, args, delay, tmp)
	// A replica is found by its environment: ONCEPROOF_DATA_DIR under tmp.
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := servicesUnder(tmp)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer service processes left behind: %v", left)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// servicesUnder lists the pids whose environment holds a data directory
// under tmp.
func servicesUnder(tmp string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	needle := []byte("ONCEPROOF_DATA_DIR=" + tmp)
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, needle) {
			out = append(out, filepath.Base(filepath.Dir(p)))
		}
	}
	return out
}
