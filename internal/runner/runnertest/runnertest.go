// Package runnertest runs a suite for the kit's own tests, which need a
// verdict from every rule they run.
package runnertest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// Decided runs register's rules (only, or every rule) as `tck run` does
// and runs every rule left unknown once more: on a loaded host (make test
// beside two CPU burners) a timed rule can be honestly undecided, its
// evidence naming the kit's lost time or a server of its own that was slow
// to restart, and the self-test gives such a rule a second run too
// (internal/selftest). A fail is never rerun. logf names each rerun.
func Decided(key string, register func(), only []string, logf func(format string, args ...any)) map[string]verdict.Result {
	out := map[string]verdict.Result{}
	var again []string
	for _, r := range runner.Run(key, register, runner.Options{Rules: only}) {
		out[r.Rule] = r
		if r.Verdict == verdict.Unknown {
			logf("%s: %s: unknown, run again: %s", key, r.Rule, r.Reason)
			again = append(again, r.Rule)
		}
	}
	if len(again) == 0 {
		return out
	}
	for _, r := range runner.Run(key, register, runner.Options{Rules: again}) {
		if out[r.Rule].Verdict == verdict.Unknown {
			out[r.Rule] = r
		}
	}
	return out
}

// Passes runs every rule of register (Decided) and fails t on a fail, or on
// a rule left undecided twice; not-applicable and skipped rules say why in
// their results, which the caller's other tests check.
func Passes(t testing.TB, key string, register func()) {
	t.Helper()
	for _, r := range Decided(key, register, nil, t.Logf) {
		if r.Verdict == verdict.Fail || r.Verdict == verdict.Unknown {
			t.Errorf("%s: %s: %s", r.Rule, r.Verdict, r.Reason)
		}
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
