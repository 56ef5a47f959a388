package selftest_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/selftest"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// edgeRules are the rules of issue 37; TestEdgeRules runs them alone (the
// kill matrix runs them with the rest).
var edgeRules = []string{"ES-1.14", "ES-1.15", "ES-1.16", "ES-1.17", "ES-1.18"}

// TestEdgeRules runs the rules of issue 37 (ES-1.14 to ES-1.18) against
// the event-store references and every mutant registered to fail one of
// them: the references pass each (ES-1.17, whose fill fits its budget only
// on a fast store, may instead be skipped with the figure
// spec.ShortOfPace, as it is on memory-paced and sqlite; memory, given a
// --max-wait as the mutants are, must pass it), each mutant fails what it
// must.
// TCK_EDGE_TARGETS (comma-separated target names, e.g.
// memory,sqlite,process-python) narrows the references; postgres runs only
// with TCK_POSTGRES_URL.
func TestEdgeRules(t *testing.T) {
	t.Parallel() // see matrixJobs
	reg := registry.Targets()
	refs := []string{"memory", "memory-paced", "sqlite", "process-python", "postgres"}
	if v := os.Getenv("TCK_EDGE_TARGETS"); v != "" {
		refs = strings.Split(v, ",")
	}
	for _, k := range reg.Kinds("eventstore", true) {
		var want []string
		switch {
		case k.Mutant:
			for _, id := range k.MustFail {
				if slices.Contains(edgeRules, id) {
					want = append(want, id)
				}
			}
			if len(want) == 0 {
				continue
			}
		case slices.Contains(refs, k.Name):
		default:
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			if k.Name == "postgres" && os.Getenv("TCK_POSTGRES_URL") == "" {
				t.Skip("TCK_POSTGRES_URL is unset: no PostgreSQL to run against")
			}
			ref := target.Ref{Suite: k.Suite, Name: k.Name}
			if k.Name == "postgres" {
				ref.Address = os.Getenv("TCK_POSTGRES_URL")
			}
			_, ref, err := reg.Resolve(ref)
			if err != nil {
				t.Fatal(err)
			}
			if k.Mutant || k.Name == "memory" {
				// The kill and memory's pass, not the host's speed: a
				// busy host would skip ES-1.17's fill for its pace.
				ref.Opts.MaxWait = 2 * time.Minute
			}
			started, err := k.Start(context.Background(), ref)
			if err != nil {
				t.Skipf("%s cannot start here: %v", k.Name, err)
			}
			defer func() { _ = started.Stop() }()
			got := map[string]verdict.Result{}
			rules := edgeRules
			if k.Mutant {
				rules = want // as the kill matrix runs a mutant: its own rules
			}
			for _, res := range runner.Run(k.Key(), started.Register, runner.Options{Rules: rules}) {
				got[res.Rule] = res
			}
			for _, id := range rules {
				res := got[id]
				t.Logf("%s: %s: %s", id, res.Verdict, res.Reason)
				switch {
				case k.Mutant && slices.Contains(want, id) && res.Verdict != verdict.Fail:
					t.Errorf("mutant %s must fail %s, got %s: %s", k.Name, id, res.Verdict, res.Reason)
				case !k.Mutant && k.Name != "memory" && selftest.SkippedForPace(res):
					t.Logf("reference %s: %s is skipped at the store's pace (allowed): %s", k.Name, id, res.Reason)
				case !k.Mutant && res.Verdict != verdict.Pass:
					t.Errorf("reference %s: %s is %s, want pass: %s", k.Name, id, res.Verdict, res.Reason)
				}
			}
		})
	}
}
