package spec

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/safetext"
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
func (s *Set) Test(t *testing.T) {
	t.Helper()
	t.Cleanup(s.finish)
	for _, ru := range s.rules {
		t.Run(ru.id, func(t *testing.T) {
			if s.Parallel {
				t.Parallel()
			}
			res := s.runOne(ru)
			report(t, ru, res)
		})
	}
}

// outcome is how one body ended.
type outcome struct {
	v      verdict.Verdict
	reason string
	ev     *verdict.Evidence
}

func (s *Set) runOne(ru rule) outcome {
	ev := &verdict.Evidence{}
	if why := ru.notApplicable(); why != "" {
		return outcome{verdict.NotApplicable, why, ev}
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	defer cancel()
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
		out := outcome{verdict.Pass, "all checks held", ev}
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
						return
					}
					out.v, out.reason = verdict.Fail, fmt.Sprintf("the target panicked: %v", p)
					ev.Notef("panic: %v\n%s", p, debug.Stack())
				}
			}()
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
		return out
	case <-time.After(s.Timeout + Grace):
		return outcome{verdict.Unknown, fmt.Sprintf("the rule did not finish within %s of its deadline %s (the target may hang)", Grace, s.Timeout), ev}
	}
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
func report(t *testing.T, ru rule, out outcome) {
	t.Helper()
	reason := safetext.Text(out.reason)
	switch out.v {
	case verdict.Pass:
		t.Logf("pass: %s", reason)
	case verdict.Fail, verdict.Unknown:
		var b strings.Builder
		for _, n := range out.ev.Snapshot().Notes {
			b.WriteString("\n  " + strings.ReplaceAll(safetext.Lines(n), "\n", "\n  "))
		}
		t.Errorf("%s %s: %s: %s%s", ru.id, ru.meta.Title, out.v, reason, b.String())
	default:
		t.Skipf("%s: %s", out.v, reason)
	}
}
