package spec

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// Ginkgo registers every rule of the set as a ginkgo.It inside a container
// named after the suite. Call it while Ginkgo builds its tree (from a suite's
// Register, before RunSpecs).
//
// The container is Ordered (rules run in the catalog's order) and
// ContinueOnFailure (a failed rule does not skip the next one), so the set's
// Prepare and Finish can run around exactly the rules that run.
//
// UnknownIsSkip among opts reports an undecided rule as a Ginkgo skip: the
// verdict stays unknown in the report either way; this only decides whether
// a plain `go test` of an author's Ginkgo suite goes green with an undecided
// rule, which it must not unless asked.
func (s *Set) Ginkgo(opts ...Option) {
	s.ginkgoAt(types.NewCodeLocation(1), options(opts))
}

// ginkgoAt registers the set with its container and specs located at loc
// (the author's Register call), so Ginkgo's output names the author's
// file, not the kit's.
func (s *Set) ginkgoAt(loc types.CodeLocation, o Option) {
	if c := collector.Load(); c != nil {
		(*c)(s)
		return
	}
	var once sync.Once
	dir := reportDir(o)
	ginkgo.Describe(s.suite, loc, ginkgo.Ordered, ginkgo.ContinueOnFailure, func() {
		ginkgo.AfterAll(s.finish)
		if dir != "" {
			// After each rule the whole report is written again, merged
			// with what the process wrote before: an interrupted suite
			// leaves the rules that ran.
			ginkgo.ReportAfterEach(func(rep types.SpecReport) {
				name := s.suite + "/" + containerName(rep.ContainerHierarchyTexts)
				res := ResultOf(name, rep, nil)
				if res.Rule == "" {
					return
				}
				if err := writeReport(dir, s.suite, name, target.Mode("ginkgo"), []verdict.Result{res}); err != nil {
					ginkgo.Fail("writing the report into " + dir + ": " + err.Error())
				}
			}, loc)
		}
		var (
			mu   sync.Mutex
			outs map[string]outcome // a Concurrent set's outcomes, from its first spec
		)
		for _, ru := range s.rules {
			decorations := []any{loc, ginkgo.Label(Labels(ru.meta)...), ginkgo.GracePeriod(Grace)}
			ginkgo.It(ru.id+" "+ru.meta.Title, append(decorations, func(ctx ginkgo.SpecContext) {
				once.Do(func() {
					s.probe(ctx)
					ids := s.selected()
					s.prepare(ids)
					if s.Concurrent {
						// Ginkgo runs specs one after another: the first
						// runs the set's rules at once, each spec reports
						// its own.
						outs = map[string]outcome{}
						s.runAll(ctx, ids, say, func(ru rule, out outcome) {
							mu.Lock()
							outs[ru.id] = out
							mu.Unlock()
						})
					}
				})
				mu.Lock()
				out, ok := outs[ru.id]
				mu.Unlock()
				if !ok {
					out = s.runWithin(ctx, ru, say)
				}
				reportOutcome(ctx, ru, out, o)
			})...)
		}
	})
}

// say is where a rule prints its progress lines under Ginkgo.
func say(line string) { fmt.Fprintln(ginkgo.GinkgoWriter, line) }

// reportOutcome ends a rule's spec with its outcome.
func reportOutcome(ctx context.Context, ru rule, out outcome, o Option) {
	if ctx.Err() != nil && out.v != verdict.Pass && out.v != verdict.Fail {
		ginkgo.Skip("the run was interrupted before " + ru.id + " finished")
	}
	ev := out.ev
	if ev == nil {
		ev = &verdict.Evidence{}
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

// containerName names a Register's target in the report by the author's
// containers around it ("my event store"), the set's own container left out.
func containerName(texts []string) string {
	if len(texts) > 0 {
		texts = texts[:len(texts)-1]
	}
	if len(texts) == 0 {
		return "Register"
	}
	return strings.Join(texts, " / ")
}

// selected are the ids of the rules that apply and that Ginkgo's label
// filter selects.
func (s *Set) selected() []string {
	var filter types.LabelFilter
	if lf := ginkgo.GinkgoLabelFilter(); lf != "" {
		if f, err := types.ParseLabelFilter(lf); err == nil {
			filter = f
		}
	}
	var ids []string
	for _, ru := range s.rules {
		if !s.applies(ru) {
			continue
		}
		if filter == nil || filter(Labels(ru.meta)) {
			ids = append(ids, ru.id)
		}
	}
	return ids
}

// ginkgoLabelFilter is the running suite's label filter.
func ginkgoLabelFilter() string { return ginkgo.GinkgoLabelFilter() }

// collector, while set, receives the sets a suite's Register (or
// Set.Ginkgo) would register with Ginkgo: the kit's own test runner
// (internal/runner) runs them through the engine instead.
var collector atomic.Pointer[func(*Set)]

// CollectRegistered hands every set registered with Ginkgo to fn, instead
// of Ginkgo, until the returned function is called. Only the kit's test
// runner calls it, around a register function it was given.
func CollectRegistered(fn func(*Set)) (restore func()) {
	old := collector.Swap(&fn)
	return func() { collector.Store(old) }
}
