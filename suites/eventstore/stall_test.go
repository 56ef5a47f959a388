package eventstore_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/eventstore/memory"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/suites/eventstore"
)

// deadlined is a correct store behind a client deadline, as a network
// store's client has one: an append takes 2 ms, and one that took longer
// than 100 ms by the client's clock returns a timeout whatever the store
// did with it (it may well be stored). Only a pause of the kit makes one
// time out.
type deadlined struct{ es.EventStore }

func (d deadlined) Append(ctx context.Context, s es.Stream) error {
	start := time.Now()
	time.Sleep(2 * time.Millisecond)
	err := d.EventStore.Append(ctx, s)
	if time.Since(start) > 100*time.Millisecond {
		fmt.Fprintln(os.Stderr, "deadlined: an append outlived its deadline")
		return fmt.Errorf("append to the store: %w", context.DeadlineExceeded)
	}
	return err
}

// TestPausedRaceIsNoViolation stops a race rule (this test binary, re-run
// on the helper below) with SIGSTOP twice mid-trial: the appends the pause
// held past their client's deadline come back as timeouts, which in a
// trial the kit was scheduled through would be a violation; here they are
// put down to the pause and the rule passes on the trials it was not
// paused in.
func TestPausedRaceIsNoViolation(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: a race rule stopped twice for a second")
	}
	cmd := exec.Command(os.Args[0], `-test.run=^TestStalledRaceHelper$/^ES-2\.1$`, "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "ONCEPROOF_STALL_HELPER=1")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{500 * time.Millisecond, 700 * time.Millisecond} {
		time.Sleep(at)
		_ = cmd.Process.Signal(syscall.SIGSTOP)
		time.Sleep(time.Second)
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	err := cmd.Wait()
	s := out.String()
	if err != nil || !strings.Contains(s, "--- PASS: TestStalledRaceHelper/ES-2.1") {
		t.Fatalf("the paused race rule did not pass (%v):\n%s", err, s)
	}
	if !strings.Contains(s, "deadlined: an append outlived its deadline") {
		t.Fatalf("no append was held past its deadline by the pauses, so the case was not exercised:\n%s", s)
	}
}

// TestStalledRaceHelper is the child of TestPausedRaceIsNoViolation.
func TestStalledRaceHelper(t *testing.T) {
	if os.Getenv("ONCEPROOF_STALL_HELPER") != "1" {
		t.Skip("run by TestPausedRaceIsNoViolation in a child process")
	}
	db := memory.NewDB()
	eventstore.Check(t, eventstore.Target{
		Open: func(context.Context) (es.EventStore, error) { return deadlined{db.Open()}, nil },
	})
}

// TestPausedReachIsNoFailure stops ES-4.3 (this test binary, re-run on the
// helper below) with SIGSTOP twice for a second, during its fill and during
// its wait: the rule passes on a correct store, and its evidence counts the
// time the kit was not scheduled (which it does not count as reach).
func TestPausedReachIsNoFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: ES-4.3 (6 s) stopped twice for a second")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], `-test.run=^TestStalledReachHelper$/^ES-4\.3$`, "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "ONCEPROOF_STALL_HELPER=1", "TCK_REPORT_DIR="+dir)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{800 * time.Millisecond, 2 * time.Second} {
		time.Sleep(at)
		_ = cmd.Process.Signal(syscall.SIGSTOP)
		time.Sleep(time.Second)
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	err := cmd.Wait()
	s := out.String()
	if err != nil || !strings.Contains(s, "--- PASS: TestStalledReachHelper/ES-4.3") {
		t.Fatalf("the paused ES-4.3 did not pass (%v):\n%s", err, s)
	}
	res, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), "time the kit was not scheduled") {
		t.Fatalf("the evidence does not count the pauses:\n%s", res)
	}
}

// TestStalledReachHelper is the child of TestPausedReachIsNoFailure.
func TestStalledReachHelper(t *testing.T) {
	if os.Getenv("ONCEPROOF_STALL_HELPER") != "1" {
		t.Skip("run by TestPausedReachIsNoFailure in a child process")
	}
	db := memory.NewDB()
	eventstore.Check(t, eventstore.Target{
		Open: func(context.Context) (es.EventStore, error) { return db.Open(), nil },
	})
}
