package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/verdict"
)

// TestInterruptLeavesNothing sends SIGINT to `tck run` at many points of a
// run, the default run and, where Docker is available, a container run, and
// checks after each that the process exited as documented (2 when
// interrupted, or the run's own code when it finished first), wrote no
// half report, and left nothing behind: no file in its own TMPDIR (the
// kit's temporary folders and child servers' stores), no child process, no
// container, network or volume labelled with its pid.
//
// The points are sampled, not exhausted: every point before the first
// target starts (up to 150 ms, each run is short), then one point from
// each consecutive group of three later ones (six of eighteen, from 250 ms
// to 12 s) and one container point from each group of two (three of six),
// so each run covers the whole span and CI runs cover every point. The
// seed and the points run are logged; ONCEPROOF_INTERRUPT_SEED=N replays a
// sample, ONCEPROOF_INTERRUPT_ALL=1 runs every point.
func TestInterruptLeavesNothing(t *testing.T) {
	t.Parallel() // see parallelTests in bin_test.go
	if testing.Short() {
		t.Skip("skipped with -short: about 13 runs of the CLI")
	}
	bin := tckBinary(t)
	type run struct {
		args  []string
		delay time.Duration
	}
	var runs []run
	pick := interruptSample(t)
	// The default run: delays from before the first target starts to deep
	// into the broker and consumer suites.
	early := []int{0, 30, 80, 150}
	late := []int{250, 400, 600, 800, 1000, 1300, 1600, 2000, 2500, 3000, 3600, 4300, 5000, 6000, 7000, 8500, 10000, 12000}
	for _, ms := range append(early, pick(late, 3)...) {
		runs = append(runs, run{[]string{"run", "--quiet"}, time.Duration(ms) * time.Millisecond})
	}
	docker := containers.Available(context.Background()) == nil
	if !docker && os.Getenv("TCK_REQUIRE_DOCKER") == "1" {
		t.Fatal("Docker is not available and TCK_REQUIRE_DOCKER=1")
	}
	if docker {
		for _, ms := range pick([]int{100, 700, 1500, 2500, 3500, 5000}, 2) {
			runs = append(runs, run{[]string{"run", "--quiet", "--suite", "broker", "--target", "broker/nats=container"}, time.Duration(ms) * time.Millisecond})
		}
	} else {
		t.Log("Docker is not available: container runs not interrupted (set TCK_REQUIRE_DOCKER=1 to fail instead)")
	}
	for _, r := range runs {
		name := fmt.Sprintf("%s@%s", strings.Join(r.args[2:], " "), r.delay)
		if len(r.args) == 2 {
			name = "default@" + r.delay.String()
		}
		// Each run is a process of its own with its own TMPDIR and out
		// folder, checked by its pid and TMPDIR: the runs wait on their
		// children and the signal, side by side.
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			interruptOnce(t, bin, r.args, r.delay)
		})
	}
}

// interruptSample returns the sampler of TestInterruptLeavesNothing: one
// point (ms) from each consecutive group of size, with the seed logged.
func interruptSample(t *testing.T) func(points []int, size int) []int {
	t.Helper()
	all := os.Getenv("ONCEPROOF_INTERRUPT_ALL") == "1"
	seed, err := strconv.ParseInt(os.Getenv("ONCEPROOF_INTERRUPT_SEED"), 10, 64)
	if err != nil {
		seed = time.Now().UnixNano()
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	if all {
		t.Log("interrupt points: every point (ONCEPROOF_INTERRUPT_ALL=1)")
	} else {
		t.Logf("interrupt points: sampled with ONCEPROOF_INTERRUPT_SEED=%d (ONCEPROOF_INTERRUPT_ALL=1 runs every point)", seed)
	}
	return func(points []int, size int) []int {
		if all {
			return points
		}
		var out []int
		for i := 0; i < len(points); i += size {
			group := points[i:min(i+size, len(points))]
			out = append(out, group[rng.IntN(len(group))])
		}
		t.Logf("interrupt points: %v of %v", out, points)
		return out
	}
}

func interruptOnce(t *testing.T, bin string, args []string, delay time.Duration) {
	interruptOnceIn(t, "", bin, args, delay, t.TempDir())
}

// interruptOnceIn is interruptOnce run in dir with the run's TMPDIR given.
func interruptOnceIn(t *testing.T, dir, bin string, args []string, delay time.Duration, tmp string) {
	out := filepath.Join(t.TempDir(), "report")
	cmd := exec.Command(bin, append(args, "--out", out)...)
	cmd.Dir = dir // "": the test's own
	// Its own TMPDIR: anything left in it afterwards is a leftover.
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "GOTRACEBACK=all")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	interrupted := false
	select {
	case <-done:
		done <- nil
	case <-time.After(delay):
		_ = cmd.Process.Signal(syscall.SIGINT)
		interrupted = true
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(90 * time.Second):
		// SIGQUIT: Go prints every goroutine, which names what it waits on.
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		t.Fatalf("still running 90 s after SIGINT; stderr (with its goroutines, after a SIGQUIT):\n%s", stderr.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if s := stderr.String(); strings.Contains(s, "goroutine ") || strings.Contains(s, "panic:") {
		t.Errorf("stack trace on stderr:\n%s", s)
	}
	if s := stderr.String(); strings.Contains(s, "did not stop within") {
		// Documented (the grace after an interrupt), yet a target that
		// ignores the interrupt is worth chasing: where it waited is in
		// the report folder's run.log.
		log, _ := os.ReadFile(filepath.Join(out, "run.log"))
		t.Logf("a target was abandoned after the interrupt:\n%s\nrun.log:\n%s", s, log)
	}
	if code == -1 {
		// The signal came before main installed the CLI's handler (its
		// first statement; a loaded runner can take tens of milliseconds
		// to get there): the process died of it before creating anything.
		// Once the handler is installed SIGINT cannot end it this way.
		if _, err := os.Stat(out); err == nil {
			t.Errorf("killed by SIGINT before its handler, yet it had created %s", out)
		}
		assertNothingLeft(t, pid, tmp)
		return
	}
	switch {
	case interrupted && code != reports.ExitInconclusive && code != reports.ExitConformant:
		t.Errorf("exit %d after SIGINT, want 2 (or 0 when the run had already finished); stderr:\n%s%s", code, stderr.String(), failedRules(out))
	case !interrupted && code != reports.ExitConformant:
		t.Errorf("finished before the signal with exit %d; stderr:\n%s", code, stderr.String())
	}
	// A report is whole or absent: never a temporary file left in place.
	if tmps, _ := filepath.Glob(filepath.Join(out, ".tmp-*")); len(tmps) > 0 {
		t.Errorf("half-written report files: %v", tmps)
	}
	if _, err := os.Stat(filepath.Join(out, lockFile)); err == nil {
		t.Errorf("the report folder's lock was left behind")
	}
	if code == reports.ExitInconclusive {
		if _, err := os.Stat(out); os.IsNotExist(err) && strings.Contains(stderr.String(), msgInterruptedEarly) {
			// Interrupted while loading (a loaded runner can still be
			// there 30 ms in): nothing started, so nothing is written.
			assertNothingLeft(t, pid, tmp)
			return
		}
		if _, err := os.Stat(filepath.Join(out, reports.FileJSON)); err != nil {
			t.Errorf("interrupted run wrote no results.json: %v", err)
		}
	}
	assertNothingLeft(t, pid, tmp)
}

// assertNothingLeft checks the kit's leftovers for the process pid, whose
// TMPDIR was tmp. Removal on an exit path may still be finishing in a
// child's own exit, so it is given a few seconds.
func assertNothingLeft(t *testing.T, pid int, tmp string) {
	t.Helper()
	var left []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		left = left[:0]
		entries, _ := os.ReadDir(tmp)
		for _, e := range entries {
			left = append(left, "temp: "+e.Name())
		}
		if ps, err := exec.Command("pgrep", "-f", tmp).Output(); err == nil {
			for _, p := range strings.Fields(string(ps)) {
				left = append(left, "process: "+p)
			}
		}
		if containers.Available(context.Background()) == nil {
			for _, kind := range []string{"ps -aq", "network ls -q", "volume ls -q"} {
				a := append(strings.Fields(kind), "--filter", "label="+containers.LabelPID+"="+strconv.Itoa(pid))
				ids, _ := exec.Command("docker", a...).Output()
				for _, id := range strings.Fields(string(ids)) {
					left = append(left, "docker "+strings.Fields(kind)[0]+": "+id)
				}
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("left behind: %s", strings.Join(left, "; "))
	}
}

// failedRules names the failed results of the report in out, if it has one:
// what an exit 1 after SIGINT decided, for the log.
func failedRules(out string) string {
	rep, err := reports.Read(filepath.Join(out, reports.FileJSON))
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, r := range rep.Results {
		if r.Verdict == verdict.Fail {
			fmt.Fprintf(&b, "\nfailed: %s %s: %s", r.Target, r.Rule, r.Reason)
		}
	}
	return b.String()
}
