package selftest

import (
	"testing"

	"github.com/onceproof/tck/internal/verdict"
)

// A mutant's seeded rule is rerun on a fresh seed; the reference's is not
// (a reference failing on one seed is the kit's defect); race rules are
// rerun for both.
func TestStochasticRules(t *testing.T) {
	seeded := verdict.Result{Rule: "ES-4.1", Evidence: &verdict.Evidence{Figures: []verdict.Figure{{Name: "seed", Value: 7}}}}
	raced := verdict.Result{Rule: "ES-2.1", Evidence: &verdict.Evidence{Figures: []verdict.Figure{{Name: "contended trials", Value: 40}}}}
	plain := verdict.Result{Rule: "ES-1.1", Evidence: &verdict.Evidence{}}
	for _, c := range []struct {
		res    verdict.Result
		mutant bool
		want   bool
	}{
		{seeded, true, true}, {seeded, false, false},
		{raced, true, true}, {raced, false, true},
		{plain, true, false}, {verdict.Result{Rule: "ES-1.2"}, true, false},
	} {
		if got := stochastic(c.res, c.mutant); got != c.want {
			t.Errorf("stochastic(%s, mutant=%v) = %v, want %v", c.res.Rule, c.mutant, got, c.want)
		}
	}
}
