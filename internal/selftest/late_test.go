package selftest_test

import (
	"testing"

	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/internal/selftest"
	"github.com/onceproof/tck/internal/verdict"
)

// noProblems fails t for each problem of m, but accepts (and logs) a cell
// still unknown after the matrix's reruns whose reason names the kit's own
// lateness (runnertest.Late: a loaded host), as the kit's other tests do.
func noProblems(t *testing.T, m selftest.Matrix) {
	t.Helper()
	late := func(row selftest.Row, id string) bool {
		r := verdict.Result{Rule: id, Verdict: row.Verdicts[id], Reason: row.Reasons[id]}
		if !runnertest.Late(r) {
			return false
		}
		t.Logf("%s: %s still unknown after the matrix's reruns, its reason naming the kit's own lateness (a loaded host), accepted as undecided, not as a pass: %s", row.Target, id, r.Reason)
		return true
	}
	for _, p := range m.ProblemsExcept(late) {
		t.Error(p)
	}
}
