package spec

import (
	"context"
	"fmt"
	"sync"

	"github.com/onsi/ginkgo/v2"

	"github.com/onceproof/tck/internal/verdict"
)

// DefaultMaxAhead bounds an Ahead set's bodies running ahead under
// Ginkgo: more than any suite's rules, so the longest rule starts at once
// wherever the catalog puts it. Most rules wait (a window, an ack wait, a
// redelivery); a rule that needs the processors holds a share of them
// (ItRace).
const DefaultMaxAhead = 32

// ahead is an Ahead set's bodies running ahead of their specs under
// Ginkgo: Ginkgo runs the specs one after another, so the set runs the
// bodies in the background from the first spec on, the same bodies the go
// test driver runs as parallel subtests, and each spec reports its rule's
// outcome when it is there.
type ahead struct {
	mu     sync.Mutex
	runs   map[string]*aheadRun
	wg     sync.WaitGroup
	cancel context.CancelFunc
}

// aheadRun is one body running ahead.
type aheadRun struct {
	done chan struct{}
	out  outcome
}

// startAhead starts the body of every selected rule that is not alone, at
// most MaxAhead at a time in the set's order.
func (s *Set) startAhead(ids []string) {
	selected := map[string]bool{}
	for _, id := range ids {
		selected[id] = true
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.ahead.mu.Lock()
	defer s.ahead.mu.Unlock()
	s.ahead.cancel = cancel
	s.ahead.runs = map[string]*aheadRun{}
	n := s.MaxAhead
	if n <= 0 {
		n = DefaultMaxAhead
	}
	slots := make(chan struct{}, n)
	for _, ru := range s.rules {
		if ru.alone || !selected[ru.id] {
			continue
		}
		run := &aheadRun{done: make(chan struct{})}
		s.ahead.runs[ru.id] = run
		s.ahead.wg.Add(1)
		go func() {
			defer s.ahead.wg.Done()
			defer close(run.done)
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				run.out = outcome{v: verdict.Skipped, reason: "not run: the run was interrupted", ev: &verdict.Evidence{}}
				return
			}
			defer func() { <-slots }()
			run.out = s.runWithin(ctx, ru, say)
		}()
	}
}

// runNow runs ru's body in its spec, as a body running ahead runs: an
// alone rule of an Ahead set.
func (s *Set) runNow(ctx context.Context, ru rule) *aheadRun {
	run := &aheadRun{done: make(chan struct{})}
	run.out = s.runWithin(ctx, ru)
	close(run.done)
	return run
}

// say is where a body running ahead prints its progress lines when the
// CLI's sink is not set: an author's Ginkgo output.
func say(line string) { fmt.Fprintln(ginkgo.GinkgoWriter, line) }

// stopAhead cancels the bodies still running ahead and waits for them
// (the set's finish: an interrupted run, specs that never ran).
func (s *Set) stopAhead() {
	if s.ahead.cancel == nil {
		return
	}
	s.ahead.cancel()
	s.ahead.wg.Wait()
}

// aheadOf is ru's body running ahead, or nil when it runs in its spec.
func (s *Set) aheadOf(ru rule) *aheadRun {
	s.ahead.mu.Lock()
	defer s.ahead.mu.Unlock()
	return s.ahead.runs[ru.id]
}

// reportAhead is the spec of a rule whose body ran ahead: it waits for the
// outcome (or the spec's interruption) and reports it as runGinkgo would
// have.
func reportAhead(ctx context.Context, ru rule, run *aheadRun, o Option) {
	select {
	case <-run.done:
	case <-ctx.Done():
		ginkgo.Skip("the run was interrupted before " + ru.id + " finished")
	}
	out := run.out
	ev := out.ev
	if ev == nil {
		ev = &verdict.Evidence{}
	}
	// The spec's own run time is how long it waited, not the rule's.
	if !hasFigure(ev, "rule wall time") {
		ev.Figure("rule wall time", out.wall.Seconds(), "s")
	}
	ginkgo.AddReportEntry(EntryEvidence, ev, ginkgo.ReportEntryVisibilityNever)
	ginkgo.AddReportEntry(EntryWall, out.wall, ginkgo.ReportEntryVisibilityNever)
	switch out.v {
	case verdict.Pass:
		return
	case verdict.Fail:
		ginkgo.AddReportEntry(EntryVerdict, Override{Verdict: out.v, Reason: out.reason}, ginkgo.ReportEntryVisibilityNever)
		ginkgo.Fail(out.reason)
	case verdict.Unknown:
		ginkgo.AddReportEntry(EntryVerdict, Override{Verdict: out.v, Reason: out.reason}, ginkgo.ReportEntryVisibilityNever)
		if !o.unknownIsSkip {
			ginkgo.Fail(string(out.v) + ": " + out.reason)
		}
		ginkgo.Skip(string(out.v) + ": " + out.reason)
	default:
		ginkgo.AddReportEntry(EntryVerdict, Override{Verdict: out.v, Reason: out.reason, Missing: out.missing}, ginkgo.ReportEntryVisibilityNever)
		ginkgo.Skip(string(out.v) + ": " + out.reason)
	}
}

// waitAhead waits until no body runs ahead: an alone rule's spec.
func (s *Set) waitAhead(ctx context.Context) {
	done := make(chan struct{})
	go func() { s.ahead.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func hasFigure(ev *verdict.Evidence, name string) bool {
	for _, f := range ev.Snapshot().Figures {
		if f.Name == name {
			return true
		}
	}
	return false
}
