package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/reports"
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
