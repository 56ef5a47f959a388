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
	m := selftest.Run(context.Background(), registry.Targets(), "eventstore", selftest.Options{})
	t.Log("\n" + m.Text())
	for _, p := range m.Problems() {
		t.Error(p)
	}
}
