package spec

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/onceproof/tck/internal/verdict"
)

// The rules registered with ItRace count what happened at the same time
// (contended trials, overlapping reads) within a wall-time cap, so many of
// them at once, in one process or in several targets of one run, would
// each get a sliver of the processors and, on a loaded machine, end
// unknown short of their power target. Each holds one of ProcessorShares
// while it runs: by default shares of this process; under tck run, whose
// targets run in processes of their own, shares of the whole run
// (ShareProcessors).
var (
	processors      atomic.Pointer[func(ctx context.Context) (release func(), err error)]
	localProcessors = make(chan struct{}, ProcessorShares())
)

// ProcessorShares is how many race rules run at once: one per processor.
func ProcessorShares() int { return max(1, runtime.NumCPU()) }

// ShareProcessors makes the race rules of this process take their share of
// the processors through hold (the CLI: file locks every target of its run
// takes) until the returned function is called.
func ShareProcessors(hold func(ctx context.Context) (release func(), err error)) (restore func()) {
	old := processors.Swap(&hold)
	return func() { processors.Store(old) }
}

// holdFor holds a share of the processors for a rule, noting in ev how
// long it waited for it; false when ctx ended first.
func holdFor(ctx context.Context, ev *verdict.Evidence) (func(), bool) {
	start := time.Now()
	release, err := holdProcessors(ctx)
	if err != nil {
		return nil, false
	}
	if w := time.Since(start); w >= 50*time.Millisecond {
		ev.Figure("waited for a share of the processors", w.Seconds(), "s (other race rules of the run held them; not counted in the rule's time)")
	}
	return release, true
}

// holdProcessors waits until a share of the processors is free, or ctx
// ends.
func holdProcessors(ctx context.Context) (func(), error) {
	if h := processors.Load(); h != nil {
		return (*h)(ctx)
	}
	select {
	case localProcessors <- struct{}{}:
		return func() { <-localProcessors }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
