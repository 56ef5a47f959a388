package selftest_test

import (
	"context"
	"testing"

	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/selftest"
)

// TestAPIKillMatrix runs both api references (reject-409 and replay) and
// every api mutant and asserts the references pass, each mutant fails the
// rules it must, and every API rule is failed by some mutant.
func TestAPIKillMatrix(t *testing.T) {
	t.Parallel() // see matrixJobs
	m := selftest.Run(context.Background(), registry.Targets(), "api", selftest.Options{Jobs: matrixJobs})
	t.Log("\n" + m.Text())
	refs := 0
	for _, row := range m.Rows {
		if row.Reference {
			refs++
		}
	}
	if refs != 2 {
		t.Errorf("%d api references, want 2 (one per contract)", refs)
	}
	noProblems(t, m)
}
