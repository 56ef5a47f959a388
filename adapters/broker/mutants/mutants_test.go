package mutants_test

import (
	"context"
	"slices"
	"testing"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"

	"github.com/onceproof/tck/adapters/registry"
)

// run runs the suite against k; with only, just those rules.
func run(t *testing.T, k target.Kind, only ...string) map[string]verdict.Result {
	t.Helper()
	ref := target.Ref{Suite: k.Suite, Name: k.Name, Address: string(k.Modes[0])}
	st, err := k.Start(context.Background(), ref)
	if err != nil {
		t.Fatalf("starting %s: %v", k.Key(), err)
	}
	defer st.Stop()
	out := map[string]verdict.Result{}
	for _, r := range runner.Run(ref.Key(), st.Register, runner.Options{Rules: only}) {
		out[r.Rule] = r
	}
	return out
}

// TestMutants runs the reference and every broker mutant through the suite
// (each a whole run of about 3 s; -short runs only a mutant's MustFail ids):
// the reference passes every BR rule, each mutant fails its MustFail ids,
// and every BR rule is failed by at least one mutant.
func TestMutants(t *testing.T) {
	reg := registry.Targets()
	ref, ok := reg.Get("broker/nats")
	if !ok {
		t.Fatal("broker/nats is not registered")
	}
	for id, r := range run(t, ref) {
		if r.Verdict != verdict.Pass {
			t.Errorf("reference broker/nats: %s is %s: %s", id, r.Verdict, r.Reason)
		}
	}
	killed := map[string][]string{}
	for _, k := range reg.Kinds("broker", true) {
		if !k.Mutant {
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			var only []string
			if testing.Short() {
				only = k.MustFail // -short: only what the mutant must fail
			}
			res := run(t, k, only...)
			for _, id := range k.MustFail {
				if r := res[id]; r.Verdict != verdict.Fail {
					t.Errorf("%s must fail %s, got %s: %s", k.Key(), id, r.Verdict, r.Reason)
				}
			}
			for id, r := range res {
				if r.Verdict == verdict.Fail {
					killed[id] = append(killed[id], k.Name)
					if !slices.Contains(k.MustFail, id) {
						t.Logf("also fails %s: %s", id, r.Reason)
					}
				}
			}
		})
	}
	for _, r := range catalog.All("broker") {
		if len(killed[r.ID]) == 0 {
			t.Errorf("no mutant fails %s", r.ID)
		} else {
			t.Logf("%s failed by %v", r.ID, killed[r.ID])
		}
	}
}
