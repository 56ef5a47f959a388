package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/reports"
)

// TestRuleStartsOnlyItsSuite: `tck run --rule ES-2.1` starts the event
// store's default target and nothing else, and prints only what runs.
func TestRuleStartsOnlyItsSuite(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := tck(t, "run", "--rule", "ES-2.1", "--out", out)
	// ES-2.1 may end unknown at its race cap on a loaded machine (exit 2);
	// what this test judges is what started.
	if code != reports.ExitConformant && code != reports.ExitInconclusive {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	rep, err := reports.Read(filepath.Join(out, reports.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tg := range rep.Targets {
		names = append(names, tg.Name)
	}
	if len(names) != 1 || names[0] != "eventstore/sqlite" {
		t.Errorf("targets started: %v, want only eventstore/sqlite", names)
	}
	for _, r := range rep.Results {
		if r.Suite != "eventstore" {
			t.Errorf("a result of suite %s (%s on %s)", r.Suite, r.Rule, r.Target)
		}
	}
	for _, not := range []string{"broker/", "consumer/", "api/", "filtered out"} {
		if strings.Contains(stderr, not) {
			t.Errorf("progress names %q:\n%s", not, stderr)
		}
	}
	if !strings.Contains(stderr, "ES-2.1") || strings.Contains(stderr, "ES-1.1 ") {
		t.Errorf("progress does not show ES-2.1 alone:\n%s", stderr)
	}
	if code == reports.ExitConformant {
		want := "partial: 1 of " + strconv.Itoa(len(catalog.All("eventstore"))) + " rules run"
		if !strings.HasPrefix(rep.Summary.Conclusion, want) {
			t.Errorf("headline %q, want it to start %q", rep.Summary.Conclusion, want)
		}
	}
}

// TestRuleSelectionPlans: --rule picks the suites that hold the rules; a
// suite or target named beside it that holds none is a usage error.
func TestRuleSelectionPlans(t *testing.T) {
	code, stdout, stderr := tck(t, "plan", "--rule", "ES-2.1,BR-2.1")
	if code != 0 || !strings.Contains(stdout, "eventstore/sqlite") || !strings.Contains(stdout, "broker/nats") ||
		strings.Contains(stdout, "consumer/") || strings.Contains(stdout, "api/") || strings.Contains(stdout, "ES-1.1 ") {
		t.Errorf("plan --rule ES-2.1,BR-2.1: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, args := range [][]string{
		{"run", "--rule", "ES-2.1", "--suite", "eventstore,broker"},
		{"run", "--rule", "ES-2.1", "--target", "eventstore/memory", "--target", "broker/nats"},
	} {
		// --out: a regression that runs writes into a temporary folder.
		code, stdout, stderr := tck(t, append(args, "--out", filepath.Join(t.TempDir(), "out"))...)
		if code != reports.ExitUsage || stdout != "" || !strings.Contains(stderr, "holds none of the rules selected by --rule") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 3 naming the idle target", args, code, stdout, stderr)
		}
	}
}
