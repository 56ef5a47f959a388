package spec

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"

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
		for _, ru := range s.rules {
			decorations := []any{loc, ginkgo.Label(Labels(ru.meta)...), ginkgo.GracePeriod(Grace)}
			if !s.Ahead {
				// A body running ahead has its own deadline (runWithin);
				// its spec may wait longer, for the bodies queued before it.
				decorations = append(decorations, ginkgo.SpecTimeout(s.timeoutOf(ru.id)))
			}
			ginkgo.It(ru.id+" "+ru.meta.Title, append(decorations, func(ctx ginkgo.SpecContext) {
				once.Do(func() {
					ids := s.selected()
					s.prepare(ids)
					if s.Ahead {
						s.startAhead(ids)
					}
				})
				if !s.Ahead || ru.notApplicable() != "" {
					s.runGinkgo(ctx, ru, o)
					return
				}
				run := s.aheadOf(ru)
				if run == nil {
					// Alone: once the bodies running ahead are done.
					s.waitAhead(ctx)
					run = s.runNow(ctx, ru)
				}
				reportAhead(ctx, ru, run, o)
			})...)
		}
	})
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
		if ru.notApplicable() != "" {
			continue
		}
		if filter == nil || filter(Labels(ru.meta)) {
			ids = append(ids, ru.id)
		}
	}
	return ids
}

func (s *Set) runGinkgo(ctx context.Context, ru rule, opts Option) {
	ev := &verdict.Evidence{}
	ginkgo.AddReportEntry(EntryEvidence, ev, ginkgo.ReportEntryVisibilityNever)
	r := &R{
		Ev:      ev,
		ID:      ru.id,
		ctx:     ctx,
		cleanup: func(fn func()) { ginkgo.DeferCleanup(fn) },
		end: func(v verdict.Verdict, reason string) {
			ginkgo.AddReportEntry(EntryVerdict, Override{Verdict: v, Reason: reason}, ginkgo.ReportEntryVisibilityNever)
			if v == verdict.Unknown && !opts.unknownIsSkip {
				ginkgo.Fail(string(v) + ": " + reason)
			}
			ginkgo.Skip(string(v) + ": " + reason)
		},
	}
	failed := func(reason string) {
		ginkgo.AddReportEntry(EntryVerdict, Override{Verdict: verdict.Fail, Reason: reason}, ginkgo.ReportEntryVisibilityNever)
		ginkgo.Fail(reason, 2)
	}
	r.Gomega = gomega.NewGomega(func(message string, skip ...int) {
		failed(r.fail(message, caller(skip...)))
	})
	if why := ru.notApplicable(); why != "" {
		ginkgo.AddReportEntry(EntryVerdict, Override{Verdict: verdict.NotApplicable, Reason: why, Missing: ru.missing}, ginkgo.ReportEntryVisibilityNever)
		ginkgo.Skip(string(verdict.NotApplicable) + ": " + why)
	}
	if ru.race {
		release, ok := holdFor(ctx, ev)
		if !ok {
			r.Skipped("the run was interrupted while the rule waited for the processors")
		}
		defer release()
	}
	defer watch(r, func(line string) { fmt.Fprintln(ginkgo.GinkgoWriter, line) })()
	if s.Before != nil {
		s.Before(r)
	}
	ru.body(r)
	if why := r.checksFailed(); why != "" {
		failed(why)
	}
}

// ginkgoLabelFilter is the running suite's label filter.
func ginkgoLabelFilter() string { return ginkgo.GinkgoLabelFilter() }
