// Package runner runs a suite's rules against one target for the kit's own
// tests: register is what an author would write in a Ginkgo suite (a
// suite's Register bound to a target), and the sets it registers run
// through the engine (spec.Set.Run), not Ginkgo, so one test binary runs as
// many targets as it likes, one after another or at once.
package runner

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// Options of one run.
type Options struct {
	// Rules, when not empty, limits the run to these rule ids; the others are
	// reported as skipped ("filtered out").
	Rules []string
	// Log receives the long rules' progress lines.
	Log io.Writer
	// Progress, when set, is called as each rule finishes.
	Progress func(verdict.Result)
	// Note, when set, receives a long rule's progress lines (spec's
	// R.Progress: "CO-5.1: 120 of 200 events done (15s)"); they go to Log
	// as well.
	Note func(line string)
}

// mu serializes the collection of sets: the collector is the spec
// package's (a suite's Register has no other way out).
var mu sync.Mutex

// Run runs the sets that register registers, labelling every result with
// name.
func Run(name string, register func(), opts Options) []verdict.Result {
	var sets []*spec.Set
	mu.Lock()
	restore := spec.CollectRegistered(func(s *spec.Set) { sets = append(sets, s) })
	register()
	restore()
	mu.Unlock()
	// A rule's reason says how to replay it with tck run --seed, as under
	// the CLI; no author's report is written.
	defer spec.DrivenByCLI()()
	var logMu sync.Mutex
	note := func(line string) {
		if opts.Log != nil {
			logMu.Lock()
			fmt.Fprintln(opts.Log, line)
			logMu.Unlock()
		}
		if opts.Note != nil {
			opts.Note(line)
		}
	}
	var results []verdict.Result
	for _, s := range sets {
		results = append(results, s.Run(context.Background(), target.RunOptions{Target: name, Rules: opts.Rules, Progress: opts.Progress, Note: note})...)
	}
	verdict.Sort(results, catalog.Less)
	return results
}
