package selftest_test

import (
	"context"
	"testing"

	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/selftest"
)

// TestConsumerKillMatrix is `tck selftest --suite consumer`: the reference
// passes every CO rule, each in-process and process mutant fails the rules it
// is registered to fail, and every CO rule is failed by some mutant. The
// process mutants are built with go or run with python3, as the CLI does.
func TestConsumerKillMatrix(t *testing.T) {
	t.Parallel() // see matrixJobs
	m := selftest.Run(context.Background(), registry.Targets(), "consumer", selftest.Options{Jobs: matrixJobs})
	t.Log("\n" + m.Text())
	noProblems(t, m)
}
