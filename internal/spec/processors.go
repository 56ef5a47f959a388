package spec

import (
	"context"
	"runtime"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/onceproof/tck/internal/verdict"
)

// The rules registered with ItRace count what happened at the same time
// (contended trials, overlapping reads) within a wall-time cap, so many of
// them at once, in one set or in several targets of one run, would each get
// a sliver of the processors and, on a loaded machine, end unknown short of
// their power target. Each holds one of ProcessorShares while it runs; the
// targets of a tck run share this process, so they share the shares.
var processors = semaphore.NewWeighted(int64(ProcessorShares()))

// ProcessorShares is how many race rules run at once: one per processor.
func ProcessorShares() int { return max(1, runtime.NumCPU()) }

// holdFor holds a share of the processors for a rule, noting in ev how
// long it waited for it; false when ctx ended first.
func holdFor(ctx context.Context, ev *verdict.Evidence) (func(), bool) {
	start := time.Now()
	if err := processors.Acquire(ctx, 1); err != nil {
		return nil, false
	}
	if w := time.Since(start); w >= 50*time.Millisecond {
		ev.Figure("waited for a share of the processors", w.Seconds(), "s (other race rules of the run held them; not counted in the rule's time)")
	}
	return func() { processors.Release(1) }, true
}
