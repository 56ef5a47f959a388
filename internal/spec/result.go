package spec

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/verdict"
)

var ruleIDRe = regexp.MustCompile(`^((?:ES|BR|CO|API)-\d+\.\d+) `)

// ResultOf turns the Ginkgo report of one rule's spec into its result,
// labelled with target. focus, when not empty, is the run's --rule filter:
// a spec skipped without a message outside it was filtered out. The CLI's
// runner and an author's Register (its report) read verdicts through this
// one function.
func ResultOf(target string, r types.SpecReport, focus []string) verdict.Result {
	id := ""
	if m := ruleIDRe.FindStringSubmatch(r.LeafNodeText); m != nil {
		id = m[1]
	}
	rule, _ := catalog.Lookup(id)
	res := verdict.Result{
		Rule: id, Suite: rule.Suite, Target: target, Level: string(rule.Level), Kind: string(rule.Kind),
		Title: rule.Title, DurationMs: float64(r.RunTime.Microseconds()) / 1000,
		Evidence: &verdict.Evidence{},
	}
	var override *Override
	var wall *time.Duration
	for _, e := range r.ReportEntries {
		switch e.Name {
		case EntryWall:
			if w, ok := e.GetRawValue().(time.Duration); ok {
				wall = &w
			}
		case EntryEvidence:
			if ev, ok := e.GetRawValue().(*verdict.Evidence); ok {
				res.Evidence = ev.Snapshot()
			}
		case EntryVerdict:
			if o, ok := e.GetRawValue().(Override); ok {
				override = &o
			}
		}
	}
	// A rule whose workload ran before its spec (the broker suite overlaps
	// its waits) reports the workload's own wall time.
	for _, f := range res.Evidence.Figures {
		if w, ok := f.Value.(float64); ok && f.Name == "rule wall time" && w*1000 > res.DurationMs {
			res.DurationMs = w * 1000
		}
	}
	if wall != nil {
		res.DurationMs = float64(wall.Microseconds()) / 1000
	}
	msg := strings.TrimSpace(r.Failure.Message)
	switch r.State {
	case types.SpecStatePassed:
		res.Verdict, res.Reason = verdict.Pass, "all checks held"
		if n := len(res.Evidence.Notes); n > 0 {
			res.Reason = res.Evidence.Notes[n-1]
		}
	case types.SpecStateSkipped, types.SpecStatePending:
		switch {
		case override != nil:
			res.Verdict, res.Reason, res.Missing = override.Verdict, override.Reason, override.Missing
		case msg != "":
			res.Verdict, res.Reason = verdict.Skipped, msg
		case len(focus) > 0 && !slices.Contains(focus, id):
			res.Verdict, res.Reason = verdict.Skipped, "filtered out by --rule"
		case len(focus) == 0 && labelFiltered(r):
			res.Verdict, res.Reason = verdict.Skipped, "not selected by the label filter"
		default:
			// Ginkgo skips the remaining specs without a message once the
			// run is interrupted.
			res.Verdict, res.Reason = verdict.Skipped, "not run: the run was interrupted"
		}
	case types.SpecStateFailed:
		if override != nil {
			// The driver's own reason: a failed check explained (the full
			// message is in the notes), or an unknown, which ends as a
			// Ginkgo failure unless the author opted out.
			res.Verdict, res.Reason = override.Verdict, override.Reason
			break
		}
		res.Verdict, res.Reason = verdict.Fail, explain(msg)
		res.Evidence.Notef("failure at %s:\n%s", r.Failure.Location, msg)
	case types.SpecStatePanicked:
		res.Verdict, res.Reason = verdict.Fail, "the target panicked: "+firstLine(r.Failure.ForwardedPanic)
		res.Evidence.Notef("panic: %s\n%s", r.Failure.ForwardedPanic, trimStack(r.Failure.Location.FullStackTrace))
	case types.SpecStateTimedout:
		res.Verdict = verdict.Unknown
		res.Reason = "the rule did not finish before its deadline (the target may hang): " + firstLine(msg)
		res.Evidence.Notef("deadline: %s", msg)
	case types.SpecStateInterrupted, types.SpecStateAborted:
		res.Verdict, res.Reason = verdict.Skipped, "the run was interrupted: "+firstLine(msg)
	default:
		res.Verdict, res.Reason = verdict.Unknown, fmt.Sprintf("unexpected spec state %s", r.State)
	}
	return res
}

// labelFiltered says whether the suite ran with a label filter that leaves
// r's spec out.
func labelFiltered(r types.SpecReport) bool {
	lf := ginkgoLabelFilter()
	if lf == "" {
		return false
	}
	f, err := types.ParseLabelFilter(lf)
	return err == nil && !f(r.Labels())
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if head, rest, ok := strings.Cut(s, "\n"); ok && asyncRe.MatchString(head) {
		s = strings.TrimSpace(rest) + " (" + strings.ToLower(head[:1]) + strings.TrimSuffix(head[1:], ".") + ")"
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func trimStack(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) > 24 {
		lines = lines[:24]
	}
	return strings.Join(lines, "\n")
}
