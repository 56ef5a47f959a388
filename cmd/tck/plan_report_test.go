package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/reports"
)

// TestPlanProfileOut: tck plan --profile --out writes the analysis as a
// report folder, with the exit code of the analysis; tck report --in and a
// diff read it back.
func TestPlanProfileOut(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plan")
	code, stdout, stderr := tck(t, "plan", "--profile", "../../examples/profiles/seed-07-07.yaml", "--out", dir)
	if code != reports.ExitMustFailed {
		t.Fatalf("exit %d, want 1 (hazards); stderr %s", code, stderr)
	}
	if !strings.Contains(stdout, "report: "+filepath.Join(dir, reports.FileHTML)) {
		t.Errorf("the report's path is not printed:\n%s", stdout)
	}
	html, err := os.ReadFile(filepath.Join(dir, reports.FileHTML))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"retry-past-window", "<svg", "What each acknowledgement proves", "Glossary"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if code, _, stderr := tck(t, "report", "--in", dir); code != reports.ExitMustFailed {
		t.Errorf("tck report --in: exit %d, want 1; %s", code, stderr)
	}
	if code, _, stderr := tck(t, "plan", "--out", dir); code != reports.ExitUsage {
		t.Errorf("--out without --profile: exit %d, want 3; %s", code, stderr)
	}
}
