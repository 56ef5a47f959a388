// Package runner runs one suite's Ginkgo specs against one target inside this
// process and turns Ginkgo's spec reports into verdicts. Ginkgo keeps its
// suite in globals, so runs in one process are sequential and each starts
// from a reset; tck run runs targets at once in a process each.
package runner

import (
	"fmt"
	"io"
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
	// Note, when set, receives a long rule's progress lines (spec's
	// R.Progress: "CO-5.1: 120 of 200 events done (15s)"); they go to Log
	// as well.
	Note func(line string)
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
	// The runner's caller writes the report (tck run --out); an author's
	// TCK_REPORT_DIR in the environment does not add a second one.
	defer spec.DrivenByCLI()()
	var logMu sync.Mutex
	defer spec.ProgressTo(func(line string) {
		if opts.Log != nil {
			logMu.Lock()
			fmt.Fprintln(opts.Log, line)
			logMu.Unlock()
		}
		if opts.Note != nil {
			opts.Note(line)
		}
	})()

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

// toResult is the spec package's reading of a rule's spec report: the
// same for the CLI and an author's Register.
func toResult(target string, r types.SpecReport, focus []string) verdict.Result {
	return spec.ResultOf(target, r, focus)
}
