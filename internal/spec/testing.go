package spec

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/safetext"
	"github.com/onceproof/tck/internal/stall"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// Test runs every rule of the set as a subtest of t named by its id, so
// `go test -run 'TestMyStore/ES-1.5'` runs one rule. A fail or unknown
// verdict fails the subtest with its reason and the evidence's notes;
// not-applicable and skipped verdicts skip it with their reason.
//
// Each body runs in a goroutine of its own so a body that ignores its
// deadline cannot hang the test: after the deadline and a grace period the
// subtest fails as unknown and the test goes on.
func (s *Set) Test(t *testing.T, opts ...Option) {
	t.Helper()
	o := options(opts)
	t.Cleanup(s.finish)
	// The report, when asked for, is written once every subtest (parallel
	// ones included) has ended: a cleanup of t runs after them.
	dir := reportDir(o)
	var (
		mu      sync.Mutex
		results []verdict.Result
	)
	if dir != "" {
		name := s.suite + "/" + t.Name()
		t.Cleanup(func() {
			mu.Lock()
			defer mu.Unlock()
			if err := writeReport(dir, s.suite, name, target.Mode("go test"), results); err != nil {
				t.Errorf("writing the report into %s: %v", dir, err)
			}
		})
	}
	for _, ru := range s.rules {
		ran := false
		t.Run(ru.id, func(t *testing.T) {
			ran = true
			if s.Parallel && !ru.alone && !ru.race {
				t.Parallel()
			}
			start := time.Now()
			// A body that hangs past its deadline outlives the subtest:
			// its progress lines stop with it (t.Log after the end panics).
			var logMu sync.Mutex
			open := true
			res := s.runOne(ru, func(line string) {
				logMu.Lock()
				defer logMu.Unlock()
				if open {
					t.Log(line)
				}
			})
			logMu.Lock()
			open = false
			logMu.Unlock()
			if dir != "" {
				mu.Lock()
				results = append(results, resultOf(ru, s.suite+"/"+parentName(t), res, time.Since(start)))
				mu.Unlock()
			}
			report(t, ru, res, o)
		})
		if !ran && dir != "" {
			mu.Lock()
			results = append(results, resultOf(ru, s.suite+"/"+t.Name(), outcome{v: verdict.Skipped, reason: "not selected by go test -run"}, 0))
			mu.Unlock()
		}
	}
}

// parentName is the name of a subtest's parent test.
func parentName(t *testing.T) string {
	n := t.Name()
	if i := strings.LastIndexByte(n, '/'); i >= 0 {
		return n[:i]
	}
	return n
}

// outcome is how one body ended.
type outcome struct {
	v       verdict.Verdict
	reason  string
	ev      *verdict.Evidence
	missing []string      // a not-applicable rule's missing capabilities
	wall    time.Duration // how long the body ran (a wait for the processors left out)
}

func (s *Set) runOne(ru rule, out ...func(line string)) outcome {
	return s.runWithin(context.Background(), ru, out...)
}

// runWithin runs ru's body within parent (its cancellation ends the body
// as its deadline would).
func (s *Set) runWithin(parent context.Context, ru rule, out ...func(line string)) outcome {
	ev := &verdict.Evidence{}
	s.probe(parent)
	if why, missing := s.notApplicable(ru); why != "" {
		return outcome{v: verdict.NotApplicable, reason: why, ev: ev, missing: missing}
	}
	if ru.race {
		release, ok := holdFor(parent, ev)
		if !ok {
			return outcome{v: verdict.Skipped, reason: "the run was interrupted while the rule waited for the processors", ev: ev}
		}
		defer release()
	}
	limit := s.timeoutOf(ru.id)
	// The deadline counts the kit's scheduled time: a host that paused
	// the kit gave the rule none of its time then.
	defer stall.Hold()()
	ctx, cancel := stall.WithTimeout(parent, limit)
	defer cancel()
	start := time.Now()
	done := make(chan outcome, 1)
	go func() {
		var cleanups []func()
		r := &R{
			Ev:      ev,
			ID:      ru.id,
			ctx:     ctx,
			cleanup: func(fn func()) { cleanups = append(cleanups, fn) },
			end:     func(v verdict.Verdict, reason string) { panic(ended{v, reason}) },
		}
		r.Gomega = gomega.NewGomega(func(message string, skip ...int) {
			panic(ended{verdict.Fail, r.fail(message, caller(skip...))})
		})
		var say func(string)
		if len(out) > 0 {
			say = out[0]
		}
		defer watch(r, say)()
		out := outcome{v: verdict.Pass, reason: "all checks held", ev: ev}
		func() {
			defer func() {
				for i := len(cleanups) - 1; i >= 0; i-- {
					runCleanup(cleanups[i], ev)
				}
			}()
			defer func() {
				if p := recover(); p != nil {
					if e, ok := p.(ended); ok {
						out.v, out.reason = e.v, e.reason
						// A check that failed before the rule ended
						// undecided is positive evidence: it stands.
						if why := r.checksFailed(); why != "" && e.v == verdict.Unknown {
							ev.Notef("the rule then ended unknown: %s", e.reason)
							out.v, out.reason = verdict.Fail, why
						}
						return
					}
					out.v, out.reason = verdict.Fail, fmt.Sprintf("the target panicked: %v", p)
					ev.Notef("panic: %v\n%s", p, debug.Stack())
				}
			}()
			if s.Before != nil {
				s.Before(r)
			}
			ru.body(r)
			if why := r.checksFailed(); why != "" {
				out.v, out.reason = verdict.Fail, why
			}
		}()
		if out.v == verdict.Pass {
			if n := len(ev.Notes); n > 0 {
				out.reason = ev.Notes[n-1]
			}
		}
		done <- out
	}()
	select {
	case out := <-done:
		out.wall = time.Since(start)
		return interrupted(delayNamed(out, start))
	case <-ctx.Done():
		// Cancelled (an interrupted run) or past its deadline: the body
		// has Grace to return.
		select {
		case out := <-done:
			out.wall = time.Since(start)
			return interrupted(delayNamed(out, start))
		case <-time.After(Grace):
		}
		if parent.Err() != nil {
			return outcome{v: verdict.Skipped, reason: "the run was interrupted and the rule did not return within " + Grace.String(), ev: ev}
		}
		// The kit's own pauses may be why: named as every unknown's are.
		return delayNamed(outcome{v: verdict.Unknown, reason: fmt.Sprintf("the rule did not finish within %s of its deadline %s (the target may hang)", Grace, limit), ev: ev}, start)
	}
}

// delayNamed adds the kit's own pauses and lateness during the rule to an
// undecided rule's reason that does not name them yet: whatever step was
// not reached, a reader (and scripts/stress.sh) must see that the kit's
// host took time from it.
func delayNamed(out outcome, start time.Time) outcome {
	if out.v != verdict.Unknown || stall.Named(out.reason) {
		return out
	}
	if late := stall.Since(start); late.Paused() || late.Lag >= delayWorthNaming {
		out.reason += "; " + late.String()
	}
	return out
}

// delayWorthNaming is the least lateness summed over a rule that its
// undecided reason names.
const delayWorthNaming = 100 * time.Millisecond

// interrupted is out, unless the kit began removing what it created (an
// interrupted tck run) before the body ended: what the body saw then may be
// the clean-up's doing (a database file gone), so it decides nothing.
func interrupted(out outcome) outcome {
	if !leftovers.Closing() {
		return out
	}
	out.ev.Notef("the body ended as %s (%s) after the run was interrupted and the kit had begun removing what it created: not counted", out.v, out.reason)
	out.v, out.reason = verdict.Skipped, "not decided: the run was interrupted while the rule ran"
	return out
}

// runCleanup runs one cleanup; a panic in it is noted, not propagated, so
// the other cleanups still run.
func runCleanup(fn func(), ev *verdict.Evidence) {
	defer func() {
		if p := recover(); p != nil {
			ev.Notef("cleanup panicked: %v", p)
		}
	}()
	fn()
}

// report prints the verdict into go test output; a reason or note quotes
// the target, so no control character of its reaches the terminal.
func report(t *testing.T, ru rule, out outcome, o Option) {
	t.Helper()
	reason := safetext.Text(out.reason)
	switch {
	case out.v == verdict.Pass:
		t.Logf("pass: %s", reason)
	case out.v == verdict.Fail, out.v == verdict.Unknown && !o.unknownIsSkip:
		// One line per failed check; the notes after them, but a failed
		// assertion's whole Gomega message and the kit's file:line only
		// with -v (they are for the kit's developers, and in the report).
		var b strings.Builder
		for _, n := range out.ev.Snapshot().Notes {
			if strings.HasPrefix(n, failedCheckNote) && !testing.Verbose() {
				continue
			}
			b.WriteString("\n  " + strings.ReplaceAll(safetext.Lines(n), "\n", "\n  "))
		}
		t.Errorf("%s %s: %s: %s%s", ru.id, ru.meta.Title, out.v, strings.ReplaceAll(reason, "; (", "\n  ("), b.String())
	default:
		t.Skipf("%s: %s", out.v, reason)
	}
}
