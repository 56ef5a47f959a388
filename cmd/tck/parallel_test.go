package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/reports"
	"github.com/onceproof/tck/internal/stall"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// TestParallelRunKeepsTheOrder: a run of two targets runs them at once in
// its one process, and its terminal lines, results.json and run.log are in
// the order a one-after-another run gives.
func TestParallelRunKeepsTheOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: builds the CLI")
	}
	bin := tckBinary(t)
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(bin, "run", "--target", "eventstore/memory", "--target", "eventstore/sqlite", "--rule", "ES-1.1,ES-1.2", "--out", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err != nil {
		t.Fatalf("exit %v, want 0; stderr:\n%s", err, stderr.String())
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		f := strings.Fields(l)
		lines = append(lines, f[0])
	}
	want := []string{"eventstore/memory:", "ES-1.1", "ES-1.2", "eventstore/memory:", "eventstore/sqlite:", "ES-1.1", "ES-1.2", "eventstore/sqlite:"}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("terminal lines in the wrong order:\n%s", stderr.String())
	}
	rep, err := reports.Read(filepath.Join(out, reports.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rep.Results {
		if r.Rule == "ES-1.1" || r.Rule == "ES-1.2" {
			got = append(got, r.Target+" "+r.Rule+" "+string(r.Verdict))
		}
	}
	if want := []string{"eventstore/memory ES-1.1 pass", "eventstore/memory ES-1.2 pass", "eventstore/sqlite ES-1.1 pass", "eventstore/sqlite ES-1.2 pass"}; !reflect.DeepEqual(got, want) {
		t.Errorf("results %v, want %v", got, want)
	}
	if len(rep.Targets) != 2 || rep.Targets[0].Name != "eventstore/memory" || rep.Targets[1].Name != "eventstore/sqlite" || rep.Targets[1].Version == "" {
		t.Errorf("targets %+v", rep.Targets)
	}
}

// A target that does not stop after an interrupt (its Start ignores the
// context) is abandoned after the grace: the run returns, that target's
// rules are skipped naming why, the other target's outcome stands, one
// line says so and run.log holds where the goroutines waited.
func TestInterruptAbandonsAStuckTarget(t *testing.T) {
	defer func(g time.Duration) { interruptGrace = g }(interruptGrace)
	interruptGrace = 300 * time.Millisecond
	defer stall.Hold()()
	release := make(chan struct{})
	defer close(release)
	stuck := target.Kind{Suite: "eventstore", Name: "stuck", Start: func(context.Context, target.Ref) (*target.Started, error) {
		<-release // deaf to its context
		return nil, errors.New("released")
	}}
	gone := target.Kind{Suite: "eventstore", Name: "gone", Start: func(ctx context.Context, _ target.Ref) (*target.Started, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	cfg := runConfig{quiet: true, p: plan{suites: []string{"eventstore"}, targets: []planned{
		{kind: stuck, ref: target.Ref{Suite: "eventstore", Name: "stuck"}, name: "eventstore/stuck"},
		{kind: gone, ref: target.Ref{Suite: "eventstore", Name: "gone"}, name: "eventstore/gone"},
	}}}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	var log, stderr bytes.Buffer
	outs := runTargets(ctx, cfg, &log, &stderr)
	if len(outs) != 2 || !strings.Contains(outs[0].target.Error, "did not stop within 300ms") || len(outs[0].results) == 0 || outs[0].results[0].Verdict != verdict.Skipped {
		t.Fatalf("the stuck target's outcome %+v, want skipped, abandoned", outs[0].target)
	}
	if outs[1].target.Status != "skipped" || strings.Contains(outs[1].target.Error, "abandoned") {
		t.Errorf("the target that stopped: %+v, want interrupted while starting, not abandoned", outs[1].target)
	}
	if s := stderr.String(); !strings.Contains(s, "eventstore/stuck did not stop within 300ms of the interrupt") || strings.Contains(s, "goroutine ") {
		t.Errorf("stderr %q: want one line naming the abandoned target, no stacks", s)
	}
	if !strings.Contains(log.String(), "goroutine profile") || !strings.Contains(log.String(), "TestInterruptAbandonsAStuckTarget") {
		t.Errorf("run.log lacks where the goroutines waited:\n%s", log.String())
	}
}
