package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

func result(tg, rule string, v verdict.Verdict) verdict.Result {
	return verdict.Result{Rule: rule, Suite: "eventstore", Target: tg, Level: "MUST", Verdict: v, Reason: string(v), Evidence: &verdict.Evidence{}}
}

// Several Add calls of one process end in one report: targets and results
// merged, a result of the same target and rule replaced; the folder is the
// kit's (marker), and its lock is gone after each write.
func TestAddMerges(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	kit := Kit{Name: "onceproof", Version: "test"}
	a := Target{Info: target.Info{Name: "eventstore/TestA", Suite: "eventstore"}, Status: "ran"}
	b := Target{Info: target.Info{Name: "eventstore/TestB", Suite: "eventstore"}, Status: "ran"}
	if err := Add(dir, kit, Run{}, a, []verdict.Result{result(a.Name, "ES-1.1", verdict.Fail), result(a.Name, "ES-1.2", verdict.Pass)}); err != nil {
		t.Fatal(err)
	}
	if err := Add(dir, kit, Run{}, b, []verdict.Result{result(b.Name, "ES-1.1", verdict.Pass)}); err != nil {
		t.Fatal(err)
	}
	if err := Add(dir, kit, Run{}, a, []verdict.Result{result(a.Name, "ES-1.1", verdict.Pass)}); err != nil {
		t.Fatal(err)
	}
	rep, err := ReadBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Targets) != 2 || len(rep.Results) != 3 || rep.Summary.Counts[verdict.Pass] != 3 || rep.Summary.ExitCode != ExitConformant {
		t.Errorf("merged report: %d targets, %d results, summary %+v", len(rep.Targets), len(rep.Results), rep.Summary)
	}
	for _, f := range []string{MarkerFile, FileHTML, FileMarkdown, FileJUnit} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, LockFile)); err == nil {
		t.Error("the lock file stayed after the write")
	}
}

// A folder holding a file the kit did not write is refused and left as it
// was; one the kit marked is cleared of the previous run's files.
func TestAddClaimsOnlyItsOwnFolder(t *testing.T) {
	foreign := t.TempDir()
	if err := os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	tg := Target{Info: target.Info{Name: "eventstore/T", Suite: "eventstore"}, Status: "ran"}
	err := Add(foreign, Kit{}, Run{}, tg, []verdict.Result{result(tg.Name, "ES-1.1", verdict.Pass)})
	if err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("a foreign folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(foreign, FileJSON)); err == nil {
		t.Error("a report was written into a foreign folder")
	}
	old := t.TempDir()
	for _, f := range []string{MarkerFile, FileJSON, "ginkgo.log"} {
		if err := os.WriteFile(filepath.Join(old, f), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Add(old, Kit{}, Run{}, tg, []verdict.Result{result(tg.Name, "ES-1.1", verdict.Pass)}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(old, "ginkgo.log")); err == nil {
		t.Error("the previous run's ginkgo.log was not cleared")
	}
	if rep, err := ReadBundle(old); err != nil || len(rep.Results) != 1 {
		t.Errorf("the new report: %v %+v", err, rep)
	}
}
