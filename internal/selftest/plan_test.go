package selftest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// The reference runs every rule; a mutant runs its registered rules plus
// every rule no mutant is registered to fail; a mutant registered to fail
// nothing runs every rule.
func TestPlanRules(t *testing.T) {
	kinds := []target.Kind{
		{Name: "reference", Reference: true},
		{Name: "a", Mutant: true, MustFail: []string{"R-1"}},
		{Name: "b", Mutant: true, MustFail: []string{"R-2", "R-1"}},
		{Name: "c", Mutant: true},
	}
	p := planFor([]string{"R-1", "R-2", "R-3"}, kinds)
	for _, c := range []struct {
		kind int
		want []string
	}{{0, nil}, {1, []string{"R-1", "R-3"}}, {2, []string{"R-2", "R-1", "R-3"}}, {3, nil}} {
		if got := p.rules(kinds[c.kind]); !slices.Equal(got, c.want) {
			t.Errorf("%s runs %v, want %v", kinds[c.kind].Name, got, c.want)
		}
	}
	if !ran(nil, "R-9") || ran([]string{"R-1"}, "R-2") {
		t.Error("ran: nil selects every rule, a list only its own")
	}
}

// A reference's skip is a problem, unless the rule said the store's pace
// put its aim beyond its budget (spec.ShortOfPace, recorded as Paced); an
// unknown is a problem all the same.
func TestPacedSkipOfAReference(t *testing.T) {
	m := Matrix{Suite: "eventstore", Rules: []string{"R-1", "R-2"}, Rows: []Row{
		{Target: "slow", Reference: true, Paced: []string{"R-2"},
			Verdicts: map[string]verdict.Verdict{"R-1": verdict.Pass, "R-2": verdict.Skipped}},
		{Target: "mutant", MustFail: []string{"R-1", "R-2"},
			Verdicts: map[string]verdict.Verdict{"R-1": verdict.Fail, "R-2": verdict.Fail}},
	}}
	if ps := m.Problems(); len(ps) != 0 {
		t.Errorf("a paced skip of a reference is no problem, got %v", ps)
	}
	m.Rows[0].Verdicts["R-2"] = verdict.Unknown
	if ps := m.Problems(); len(ps) != 1 {
		t.Errorf("an unknown of a reference is a problem, paced or not, got %v", ps)
	}
	m.Rows[0].Verdicts["R-2"] = verdict.Skipped
	m.Rows[0].Paced = nil
	if ps := m.Problems(); len(ps) != 1 {
		t.Errorf("a skip of a reference for another reason is a problem, got %v", ps)
	}
}

// Paced holds a reference's rule only when it was skipped and its figure
// says pace.
func TestSkippedForPace(t *testing.T) {
	pace := &verdict.Evidence{}
	pace.Figure(spec.ShortOfPace, "65540 appends at 300/s need 3m38s, the fill's budget is 5s", "")
	for _, c := range []struct {
		res  verdict.Result
		want bool
	}{
		{verdict.Result{Verdict: verdict.Skipped, Evidence: pace}, true},
		{verdict.Result{Verdict: verdict.Unknown, Evidence: pace}, false},
		{verdict.Result{Verdict: verdict.Skipped, Evidence: &verdict.Evidence{}}, false},
		{verdict.Result{Verdict: verdict.Skipped}, false},
	} {
		if got := SkippedForPace(c.res); got != c.want {
			t.Errorf("SkippedForPace(%s, figures %v) = %v, want %v", c.res.Verdict, c.res.Evidence != nil && len(c.res.Evidence.Figures) > 0, got, c.want)
		}
	}
}

type fakeRules func(o target.RunOptions) []verdict.Result

func (f fakeRules) Run(_ context.Context, o target.RunOptions) []verdict.Result { return f(o) }

// A mutant's must-fail rule skipped for the host's pace runs again on a
// fresh start with a longer --max-wait; its other rules, and a reference's
// paced skip, are left as they are.
func TestMutantSkippedForPaceRunsAgain(t *testing.T) {
	pace := &verdict.Evidence{}
	pace.Figure(spec.ShortOfPace, "65540 appends at 9000/s need 7s, the fill's budget is 5s", "")
	var starts []time.Duration
	kind := func(mutant bool) target.Kind {
		return target.Kind{Name: "m", Mutant: mutant, Reference: !mutant, MustFail: []string{"R-1"},
			Start: func(_ context.Context, ref target.Ref) (*target.Started, error) {
				starts = append(starts, ref.Opts.MaxWait)
				return &target.Started{Stop: func() error { return nil }, Rules: func() target.RuleSet {
					return fakeRules(func(o target.RunOptions) []verdict.Result {
						var out []verdict.Result
						for _, id := range o.Rules {
							if ref.Opts.MaxWait < pacedMaxWait {
								out = append(out, verdict.Result{Rule: id, Verdict: verdict.Skipped, Reason: "short of pace", Evidence: pace})
							} else {
								out = append(out, verdict.Result{Rule: id, Verdict: verdict.Fail, Reason: "version 65536 read back as 0"})
							}
						}
						return out
					})
				}}, nil
			}}
	}
	first := []verdict.Result{{Rule: "R-1", Verdict: verdict.Skipped, Evidence: pace}, {Rule: "R-2", Verdict: verdict.Skipped, Evidence: pace}}
	row := Row{MustFail: []string{"R-1"}, Verdicts: map[string]verdict.Verdict{"R-1": verdict.Skipped, "R-2": verdict.Skipped}, Reasons: map[string]string{"R-1": "short of pace"}}
	unpace(context.Background(), kind(true), target.Ref{}, row, first, Options{})
	if row.Verdicts["R-1"] != verdict.Fail || row.Verdicts["R-2"] != verdict.Skipped {
		t.Errorf("verdicts after the rerun %v, want R-1 fail (run again), R-2 skipped (not a must-fail)", row.Verdicts)
	}
	if !strings.Contains(row.Reasons["R-1"], "run again with --max-wait") || !strings.Contains(row.Reasons["R-1"], "short of pace") {
		t.Errorf("R-1's reason %q names neither the rerun nor the first skip", row.Reasons["R-1"])
	}
	if !slices.Equal(starts, []time.Duration{pacedMaxWait}) {
		t.Errorf("starts with max-wait %v, want one, with %s", starts, pacedMaxWait)
	}
	starts = nil
	ref := Row{Reference: true, MustFail: []string{"R-1"}, Verdicts: map[string]verdict.Verdict{"R-1": verdict.Skipped}, Reasons: map[string]string{}}
	unpace(context.Background(), kind(false), target.Ref{}, ref, first, Options{})
	if len(starts) != 0 || ref.Verdicts["R-1"] != verdict.Skipped {
		t.Errorf("a reference's paced skip was run again (%v, %s)", starts, ref.Verdicts["R-1"])
	}
}

// ProblemsExcept drops the cells it is told to accept: a reference's
// unknown is then no problem, and a mutant's accepted must-fail cell
// counts as undecided, neither "passes every rule" nor "failed by no
// mutant"; what it does not accept stays a problem.
func TestProblemsExceptAccepted(t *testing.T) {
	m := Matrix{Suite: "consumer", Rules: []string{"R-1", "R-2"}, Rows: []Row{
		{Target: "reference", Reference: true,
			Verdicts: map[string]verdict.Verdict{"R-1": verdict.Pass, "R-2": verdict.Unknown}},
		{Target: "mutant", MustFail: []string{"R-1"},
			Verdicts: map[string]verdict.Verdict{"R-1": verdict.Unknown}},
		{Target: "other", MustFail: []string{"R-2"},
			Verdicts: map[string]verdict.Verdict{"R-2": verdict.Fail}},
	}}
	if ps := m.Problems(); len(ps) != 4 {
		t.Errorf("want 4 problems (the reference's unknown, the mutant's miss and pass, R-1 failed by none), got %q", ps)
	}
	unknown := func(row Row, id string) bool { return row.Verdicts[id] == verdict.Unknown }
	if ps := m.ProblemsExcept(unknown); len(ps) != 0 {
		t.Errorf("every unknown accepted: want no problem, got %q", ps)
	}
	m.Rows[2].Verdicts["R-2"] = verdict.Pass
	if ps := m.ProblemsExcept(unknown); len(ps) != 3 {
		t.Errorf("a pass of a must-fail rule is not accepted: want 3 problems (passes every rule, misses R-2, R-2 failed by none), got %q", ps)
	}
}
