package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/reports"
)

// TestParallelRunKeepsTheOrder: a run of two targets runs them in child
// processes at once, and its terminal lines, results.json and ginkgo.log
// are in the order a one-after-another run gives.
func TestParallelRunKeepsTheOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: builds the CLI")
	}
	bin := filepath.Join(t.TempDir(), "tck")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building tck: %v\n%s", err, out)
	}
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

// TestRaceTargetsShareALane: in the default run the targets holding race
// rules (eventstore, api) run one after another, beside the broker and
// consumer targets; a --rule run without race rules runs all at once.
func TestRaceTargetsShareALane(t *testing.T) {
	p, err := makePlan(registry.Targets(), selection{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, lane := range lanes(p) {
		var names []string
		for _, i := range lane {
			names = append(names, p.targets[i].name)
		}
		got = append(got, strings.Join(names, ", "))
	}
	want := []string{"eventstore/sqlite, api/reference, api/reference-replay", "broker/nats", "consumer/reference"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lanes %q, want %q", got, want)
	}
	p, err = makePlan(registry.Targets(), selection{rules: multi{"ES-1.1", "API-1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if l := lanes(p); len(l) != 3 {
		t.Errorf("ES-1.1 and API-1.1 (three targets): lanes %v, want one each", l)
	}
}
