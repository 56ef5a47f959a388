package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/reports"
)

// TestParallelRunKeepsTheOrder: a run of two targets runs them in child
// processes at once, and its terminal lines, results.json and ginkgo.log
// are in the order a one-after-another run gives.
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

// TestPlainValue: a child's figures come back as the values a one-process
// run renders: integers as int (a 64-bit seed exact), fractions as float64.
func TestPlainValue(t *testing.T) {
	var v []any
	dec := json.NewDecoder(strings.NewReader(`[9007199254740993, 2.5, [1, "a"], {"k": 3}]`))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	got := plainValue(any(v))
	want := []any{9007199254740993, 2.5, []any{1, "a"}, map[string]any{"k": 3}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plainValue = %#v, want %#v", got, want)
	}
}

// TestProcessorsLockShares: the run's shares of the processors, two here:
// two holds (separate opens, as in two children) get one each, a third
// waits until one is released; a wait ends with its context.
func TestProcessorsLockShares(t *testing.T) {
	path := filepath.Join(t.TempDir(), "processors.lock")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	hold := fileLock(path, 2)
	first, err := hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	second, err := hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := hold(ctx); err == nil {
		t.Fatal("a third hold got a share while two held both")
	}
	first()
	third, err := hold(context.Background())
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	second()
	third()
}
