package spec

import (
	"context"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"

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
	var o Option
	for _, op := range opts {
		o.unknownIsSkip = o.unknownIsSkip || op.unknownIsSkip
	}
	var once sync.Once
	ginkgo.Describe(s.suite, ginkgo.Ordered, ginkgo.ContinueOnFailure, func() {
		ginkgo.AfterAll(s.finish)
		for _, ru := range s.rules {
			ginkgo.It(ru.id+" "+ru.meta.Title, ginkgo.Label(Labels(ru.meta)...),
				ginkgo.SpecTimeout(s.Timeout), ginkgo.GracePeriod(Grace),
				func(ctx ginkgo.SpecContext) {
					once.Do(func() { s.prepare(s.selected()) })
					s.runGinkgo(ctx, ru, o)
				})
		}
	})
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
		r.NotApplicable("%s", why)
	}
	ru.body(r)
	if why := r.checksFailed(); why != "" {
		failed(why)
	}
}

// ginkgoLabelFilter is the running suite's label filter.
func ginkgoLabelFilter() string { return ginkgo.GinkgoLabelFilter() }
