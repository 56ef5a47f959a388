// Package runner runs one suite's Ginkgo specs against one target inside this
// process and turns Ginkgo's spec reports into verdicts. Ginkgo keeps its
// suite in globals, so runs are sequential and each starts from a reset.
package runner

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/extensions/globals"
	"github.com/onsi/ginkgo/v2/formatter"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
)

// Options of one run.
type Options struct {
	// Rules, when not empty, limits the run to these rule ids; the others are
	// reported as skipped ("filtered out").
	Rules []string
	// Log receives Ginkgo's own report (failures with their locations).
	Log io.Writer
	// Progress, when set, is called as each rule finishes.
	Progress func(verdict.Result)
}

// InterruptGrace is how long a rule has to return once interrupted.
const InterruptGrace = 2 * time.Second

// mu serializes runs: Ginkgo's suite lives in package globals.
var mu sync.Mutex

// Run registers a suite's specs with register and runs them, labelling every
// result with target.
func Run(target string, register func(), opts Options) []verdict.Result {
	mu.Lock()
	defer mu.Unlock()

	globals.Reset()
	gomega.RegisterFailHandler(ginkgo.Fail)

	var (
		rmu     sync.Mutex
		results []verdict.Result
	)
	ginkgo.ReportAfterEach(func(r types.SpecReport) {
		res := toResult(target, r, opts.Rules)
		rmu.Lock()
		results = append(results, res)
		rmu.Unlock()
		if opts.Progress != nil {
			opts.Progress(res)
		}
	})
	register()

	suiteCfg := types.NewDefaultSuiteConfig()
	suiteCfg.Timeout = 24 * time.Hour // each rule has its own deadline
	suiteCfg.RandomSeed = 1           // the catalog's order, every time
	// On SIGINT or SIGTERM Ginkgo cancels the running rule's context and
	// waits this long for it to return before it moves on: an interrupt
	// ends the run within seconds whatever rule runs (cleanup comes after).
	suiteCfg.GracePeriod = InterruptGrace
	// Every spec carries its rule id as a label (spec.Labels).
	suiteCfg.LabelFilter = strings.Join(opts.Rules, " || ")
	repCfg := types.NewDefaultReporterConfig()
	repCfg.NoColor = true
	repCfg.Succinct = true

	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	saved := formatter.ColorableStdOut
	formatter.ColorableStdOut = log
	defer func() { formatter.ColorableStdOut = saved }()

	ginkgo.RunSpecs(failer{}, "onceproof "+target, suiteCfg, repCfg)

	rmu.Lock()
	defer rmu.Unlock()
	verdict.Sort(results, catalog.Less)
	return results
}

// failer satisfies ginkgo.GinkgoTestingT; the verdicts come from the spec
// reports, not from this.
type failer struct{}

func (failer) Fail() {}

var ruleIDRe = regexp.MustCompile(`^((?:ES|BR|CO|API)-\d+\.\d+) `)

func toResult(target string, r types.SpecReport, focus []string) verdict.Result {
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
	var override *spec.Override
	for _, e := range r.ReportEntries {
		switch e.Name {
		case spec.EntryEvidence:
			if ev, ok := e.GetRawValue().(*verdict.Evidence); ok {
				res.Evidence = ev.Snapshot()
			}
		case spec.EntryVerdict:
			if o, ok := e.GetRawValue().(spec.Override); ok {
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
			res.Verdict, res.Reason = override.Verdict, override.Reason
		case msg != "":
			res.Verdict, res.Reason = verdict.Skipped, msg
		case len(focus) > 0 && !slices.Contains(focus, id):
			res.Verdict, res.Reason = verdict.Skipped, "filtered out by --rule"
		default:
			// Ginkgo skips the remaining specs without a message once the
			// run is interrupted.
			res.Verdict, res.Reason = verdict.Skipped, "not run: the run was interrupted"
		}
	case types.SpecStateFailed:
		if override != nil {
			// An unknown ends as a Ginkgo failure unless the author opted out.
			res.Verdict, res.Reason = override.Verdict, override.Reason
			break
		}
		res.Verdict, res.Reason = verdict.Fail, firstLine(msg)
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

// asyncRe is the first line of a failed Eventually or Consistently: it says
// when, not what, so the reason takes the line after it as well.
var asyncRe = regexp.MustCompile(`^(Failed|Timed out) after [0-9.]+s\.$`)

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
