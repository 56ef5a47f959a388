package runnertest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// Decided runs again only what is unknown: a pass, a not-applicable or a
// skip is decided and runs once (a rerun would only give a timed rule more
// chances to be late).
func TestDecidedRerunsOnlyUnknown(t *testing.T) {
	kind, ref, err := registry.Targets().Resolve(target.Ref{Suite: "eventstore", Name: "memory"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := kind.Start(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Stop() }()
	var reruns []string
	res := runnertest.Decided(ref.Key(), st.Register, []string{"ES-1.1", "ES-1.2"}, func(format string, args ...any) {
		reruns = append(reruns, fmt.Sprintf(format, args...))
	})
	if res["ES-1.1"].Verdict != verdict.Pass || res["ES-1.2"].Verdict != verdict.Pass {
		t.Fatalf("ES-1.1 %s, ES-1.2 %s, want both pass", res["ES-1.1"].Verdict, res["ES-1.2"].Verdict)
	}
	if len(reruns) != 0 {
		t.Errorf("decided rules were run again: %q", reruns)
	}
}
