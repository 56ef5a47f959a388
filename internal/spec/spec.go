// Package spec is the one path by which a suite registers a rule as a Ginkgo
// spec. It looks the rule up in the catalog (an id that is not there is a
// programming error), names the spec after the rule ("ES-1.1 ..."), labels it
// with the id, gives it a deadline, decides not-applicable from the target's
// capabilities, and hands the body an Evidence to fill.
//
// A body reaches its verdict the Ginkgo way: returning is pass, a Gomega
// failure is fail, a panic is fail with the panic in the evidence, the
// deadline is unknown. Unknown and NotApplicable end the spec with that
// verdict and a reason; under a plain `go test` they show as skips whose
// message starts with the verdict.
package spec

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/verdict"
)

// Report entry names the runner reads back.
const (
	EntryEvidence = "onceproof.evidence"
	EntryVerdict  = "onceproof.verdict"
)

// DefaultTimeout bounds one rule unless the suite sets another.
const DefaultTimeout = 60 * time.Second

// Override is the verdict a body declared instead of pass or fail.
type Override struct {
	Verdict verdict.Verdict `json:"verdict"`
	Reason  string          `json:"reason"`
}

// Set registers the rules of one suite against one target.
type Set struct {
	suite   string
	have    map[catalog.Capability]bool
	Timeout time.Duration
}

// New makes a Set for a target that has the given capabilities.
func New(suite string, caps ...catalog.Capability) *Set {
	s := &Set{suite: suite, have: map[catalog.Capability]bool{}, Timeout: DefaultTimeout}
	for _, c := range caps {
		s.have[c] = true
	}
	return s
}

// Body is a rule's check. ctx is cancelled at the rule's deadline.
type Body func(ctx context.Context, ev *verdict.Evidence)

// It registers rule id with body.
func (s *Set) It(id string, body Body) {
	r := catalog.MustLookup(id)
	if r.Suite != s.suite {
		panic(fmt.Sprintf("spec: rule %s belongs to suite %s, not %s", id, r.Suite, s.suite))
	}
	var missing []string
	for _, c := range r.Needs {
		if !s.have[c] {
			missing = append(missing, string(c))
		}
	}
	ginkgo.It(id+" "+r.Title, ginkgo.Label(id), ginkgo.SpecTimeout(s.Timeout), ginkgo.GracePeriod(2*time.Second),
		func(ctx ginkgo.SpecContext) {
			ev := &verdict.Evidence{}
			ginkgo.AddReportEntry(EntryEvidence, ev, ginkgo.ReportEntryVisibilityNever)
			if len(missing) > 0 {
				NotApplicable("the target does not declare the capability %s", strings.Join(missing, ", "))
			}
			body(ctx, ev)
		})
}

// Unknown ends the running rule with verdict unknown: the kit could not decide.
func Unknown(format string, args ...any) {
	end(verdict.Unknown, fmt.Sprintf(format, args...))
}

// NotApplicable ends the running rule with verdict not-applicable; the reason
// must name the missing capability.
func NotApplicable(format string, args ...any) {
	end(verdict.NotApplicable, fmt.Sprintf(format, args...))
}

// Skipped ends the running rule as skipped, e.g. when a declared window is
// longer than the run's time budget. The reason says why.
func Skipped(format string, args ...any) {
	end(verdict.Skipped, fmt.Sprintf(format, args...))
}

func end(v verdict.Verdict, reason string) {
	ginkgo.AddReportEntry(EntryVerdict, Override{Verdict: v, Reason: reason}, ginkgo.ReportEntryVisibilityNever)
	ginkgo.Skip(string(v) + ": " + reason)
}
