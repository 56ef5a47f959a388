package selftest_test

import (
	"context"
	"testing"

	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/selftest"
)

// TestEventStoreKillMatrix runs the reference and every event-store mutant and
// asserts the reference passes, each mutant fails the rules it must, and every
// ES rule is failed by some mutant.
func TestEventStoreKillMatrix(t *testing.T) {
	t.Parallel() // see matrixJobs
	m := selftest.Run(context.Background(), registry.Targets(), "eventstore", selftest.Options{Jobs: matrixJobs})
	t.Log("\n" + m.Text())
	noProblems(t, m)
}

// matrixJobs: the kill matrices run side by side, each up to this many
// rows at once (selftest.Options.Jobs), as `tck selftest --jobs` and a
// `tck run` of several targets do: the rows wait far more than they
// compute, the race rules share the processors through the engine's one
// semaphore, and a verdict must hold on a loaded host anyway. One after
// another they were this package's 270 s, the last of make test to end.
const matrixJobs = 4
