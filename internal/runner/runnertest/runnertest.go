// Package runnertest runs a suite for the kit's own tests, which need a
// verdict from every rule they run.
package runnertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/stall"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// Runs bounds how often the kit's own tests run one rule: on a shared,
// loaded runner (make test beside CPU burners) a timed rule can be
// honestly undecided, its evidence naming the kit's lost time or a server
// of its own that was slow to restart, and a race rule can see too few
// calls overlap; the self-test gives such a rule another run too
// (internal/selftest). A rule is run at most Runs times in all.
const Runs = 4

// Decided runs register's rules (only, or every rule) as `tck run` does
// and runs every rule left unknown again, up to Runs runs in all. A fail
// is never rerun. logf names each rerun.
func Decided(key string, register func(), only []string, logf func(format string, args ...any)) map[string]verdict.Result {
	return until(key, register, only, func(_ string, r verdict.Result) bool { return r.Verdict == verdict.Unknown }, logf)
}

// Killed runs a mutant's rules (only, or every rule) and runs again each
// rule of mustFail that is not yet fail, up to Runs runs in all, and each
// other rule left unknown: a timed rule may be undecided on a loaded host,
// and a stochastic one (a race) may even pass a mutant when the host kept
// its calls from overlapping. logf names each rerun.
func Killed(key string, register func(), only, mustFail []string, logf func(format string, args ...any)) map[string]verdict.Result {
	return until(key, register, only, func(id string, r verdict.Result) bool {
		return r.Verdict == verdict.Unknown || (r.Verdict == verdict.Pass && slices.Contains(mustFail, id))
	}, logf)
}

// until runs the rules and reruns those again wants (never a fail), up to
// Runs runs in all; a rerun's result replaces the one before.
func until(key string, register func(), only []string, again func(string, verdict.Result) bool, logf func(format string, args ...any)) map[string]verdict.Result {
	out := map[string]verdict.Result{}
	rules := only
	for run := 1; run <= Runs; run++ {
		var next []string
		for _, r := range runner.Run(key, register, runner.Options{Rules: rules}) {
			if run > 1 && !slices.Contains(rules, r.Rule) {
				continue
			}
			out[r.Rule] = r
			if r.Verdict != verdict.Fail && again(r.Rule, r) && run < Runs {
				logf("%s: %s: %s in run %d of at most %d, run again: %s", key, r.Rule, r.Verdict, run, Runs, r.Reason)
				next = append(next, r.Rule)
			}
		}
		if len(next) == 0 {
			break
		}
		rules = next
	}
	return out
}

// Late says whether r is an unknown the kit's tests accept after Runs
// runs: its reason names the kit's own lateness in the stall package's
// wording (the kit was not scheduled, or ran late), nothing else.
func Late(r verdict.Result) bool {
	return r.Verdict == verdict.Unknown && stall.Named(r.Reason)
}

// MustFail checks that the mutant name failed rule id (res from Killed):
// a fail is what it wants; an unknown whose reason names the kit's own
// lateness, once the rerun budget ran out, is logged as accepted (saying
// so, and returning true: a caller counting which rules some mutant fails
// counts it as undecided, not as a pass); anything else fails t.
func MustFail(t testing.TB, name, id string, res map[string]verdict.Result) (undecided bool) {
	t.Helper()
	r, ok := res[id]
	switch {
	case !ok:
		t.Errorf("mutant %s must fail %s, but it did not run", name, id)
	case r.Verdict == verdict.Fail:
	case Late(r):
		t.Logf("mutant %s: %s still unknown after %d runs, its reason naming the kit's own lateness (a loaded host), accepted as undecided, not as a pass: %s", name, id, Runs, r.Reason)
		return true
	default:
		t.Errorf("mutant %s must fail %s, got %s after at most %d runs: %s", name, id, r.Verdict, Runs, r.Reason)
	}
	return false
}

// Passes runs every rule of register (Decided) and fails t on a fail, or on
// a rule left undecided after Runs runs unless its reason names the kit's
// own lateness (logged, saying so); not-applicable and skipped rules say
// why in their results, which the caller's other tests check.
func Passes(t testing.TB, key string, register func()) {
	t.Helper()
	for _, r := range Decided(key, register, nil, t.Logf) {
		Undecided(t, key, r)
	}
}

// Undecided fails t on a fail of a correct target's rule, and on an
// unknown (after the reruns of Decided) unless its reason names the kit's
// own lateness, which it logs as accepted.
func Undecided(t testing.TB, key string, r verdict.Result) {
	t.Helper()
	switch {
	case r.Verdict == verdict.Fail:
		t.Errorf("%s: %s: %s: %s", key, r.Rule, r.Verdict, r.Reason)
	case Late(r):
		t.Logf("%s: %s still unknown after %d runs, its reason naming the kit's own lateness (a loaded host), accepted as undecided: %s", key, r.Rule, Runs, r.Reason)
	case r.Verdict == verdict.Unknown:
		t.Errorf("%s: %s: %s: %s", key, r.Rule, r.Verdict, r.Reason)
	}
}

// Table is each result's verdict by rule, and the results as a table (one
// line per rule: id, verdict, duration, reason) for a failing test's message.
func Table(rs []verdict.Result) (map[string]verdict.Verdict, string) {
	got := map[string]verdict.Verdict{}
	var b strings.Builder
	for _, r := range rs {
		got[r.Rule] = r.Verdict
		fmt.Fprintf(&b, "\n  %-7s %-14s %6.0fms %s", r.Rule, r.Verdict, r.DurationMs, r.Reason)
	}
	return got, b.String()
}

// Target resolves ref in targets as the CLI does, lets set adjust the
// resolved ref's options (nil: none), starts it, runs its rules (every rule
// when none are given) and stops it, failing t when it does not start or
// stop cleanly.
func Target(t testing.TB, targets *target.Registry, ref target.Ref, set func(*target.Ref), rules ...string) []verdict.Result {
	t.Helper()
	k, ref, err := targets.Resolve(ref)
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		set(&ref)
	}
	st, err := k.Start(context.Background(), ref)
	if err != nil {
		t.Fatalf("starting %s: %v", ref.Key(), err)
	}
	defer func() {
		if err := st.Stop(); err != nil {
			t.Errorf("stopping %s: %v", ref.Key(), err)
		}
	}()
	return runner.Run(ref.Key(), st.Register, runner.Options{Rules: rules})
}
