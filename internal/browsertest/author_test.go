package browsertest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/reports"
)

// authorReport runs an example's tests (those -run matches) as its author
// would in CI, with TCK_REPORT_DIR set, and returns the report folder they
// wrote.
func authorReport(t *testing.T, example, run string) (string, *reports.Report) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "test", "-count=1", "-vet=off", "-run", run, "github.com/onceproof/tck/examples/"+example)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "TCK_REPORT_DIR="+dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("go test ./examples/%s: %v\n%s", example, err, out)
	}
	if err != nil {
		// A verdict the example's own test failed on is still reported:
		// the report is this test's business, not the verdicts.
		t.Logf("go test ./examples/%s: %v\n%s", example, err, out)
	}
	rep, rerr := reports.ReadBundle(dir)
	if rerr != nil {
		t.Fatalf("go test ./examples/%s with TCK_REPORT_DIR wrote no readable report: %v\n%s", example, rerr, out)
	}
	for _, f := range []string{reports.FileMarkdown, reports.FileHTML, reports.FileJUnit, reports.DirHistories} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the author's report has no %s: %v", f, err)
		}
	}
	return dir, rep
}

// TestAuthorReportInBrowser: the report an author's own test writes
// (Check and Register with TCK_REPORT_DIR) opens cleanly, as the CLI's
// does, for the event store, consumer and api examples.
func TestAuthorReportInBrowser(t *testing.T) {
	b := start(t)
	shots := artifacts(t)
	for _, c := range []struct {
		example string
		run     string   // the tests that write the report (make test runs every example's tests anyway)
		targets []string // the target names the report must show
	}{
		// examples/eventstore runs Check (TestMyStore) and Register (a
		// Ginkgo suite): both go into one report.
		{"eventstore", ".", []string{"eventstore/TestMyStore", "eventstore/my event store"}},
		{"consumer", "^TestProjection$", []string{"consumer/TestProjection"}},
		{"api", ".", []string{"api/TestOrders"}},
	} {
		t.Run(c.example, func(t *testing.T) {
			dir, rep := authorReport(t, c.example, c.run)
			var names []string
			for _, tg := range rep.Targets {
				names = append(names, tg.Name)
			}
			for _, want := range c.targets {
				found := 0
				for _, r := range rep.Results {
					if r.Target == want {
						found++
					}
				}
				if found == 0 {
					t.Errorf("no result of %s in the report (targets %v)", want, names)
				}
			}
			p, err := b.Load(filepath.Join(dir, reports.FileHTML), Options{Pieces: pieces()})
			if err != nil {
				t.Fatal(err)
			}
			clean(t, c.example, p)
			for _, want := range c.targets {
				if !strings.Contains(p.Text, want) {
					t.Errorf("target %s is not visible in the report", want)
				}
			}
			for _, r := range rep.Results {
				if !strings.Contains(p.Text, r.Rule) {
					t.Errorf("rule %s of %s is not visible", r.Rule, r.Target)
				}
			}
			if !strings.Contains(p.Text, rep.Summary.Conclusion) {
				t.Errorf("the verdict %q is not visible", rep.Summary.Conclusion)
			}
			for i, png := range p.Pieces {
				save(t, shots, fmt.Sprintf("author-%s-%d.png", c.example, i), png)
			}
		})
	}
}
