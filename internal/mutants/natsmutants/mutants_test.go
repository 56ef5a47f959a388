package natsmutants_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/onceproof/tck/internal/registry"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/mutants/natsmutants"
	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/broker"
)

// run starts an embedded NATS target reached through client and runs the
// suite against it (with only, just those rules), as `tck run` does.
// A rule the mutant must fail (mustFail) that did not is run again
// (runnertest.Killed), as is any rule left unknown.
func run(t *testing.T, name string, client nats.Client, mustFail []string, only ...string) map[string]verdict.Result {
	t.Helper()
	nt, err := nats.RunEmbedded(context.Background(), nats.WithClient(client))
	if err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	defer nt.Stop()
	tg := registry.BrokerTarget(nt)
	return runnertest.Killed(name, func() { broker.Register(tg.Target, tg.Hooks()) }, only, mustFail, t.Logf)
}

// TestMutants runs the reference and every broker mutant through the suite
// (a mutant runs the rules it must fail, and any NATS rule no mutant is
// registered to fail, so the last claim rests on a run; a whole run of
// each, about 3 s apiece, would only find incidental failures):
// the reference passes every BR rule that applies to NATS, each mutant
// fails its MustFail ids, and every such rule is failed by at least one
// mutant. A rule for another broker's mechanism (the Redis pending list,
// Kafka's offsets) is not-applicable on NATS; its mutants sit in front of
// that broker (internal/mutants/redismutants, ...).
func TestMutants(t *testing.T) {
	t.Parallel() // the three tests share nothing: each run has an embedded server or containers of its own
	other := map[string]bool{}
	for id, r := range run(t, "broker/nats", nats.Client{}, nil) {
		if r.Verdict == verdict.NotApplicable {
			other[id] = true
			t.Logf("%s not-applicable on NATS: %s", id, r.Reason)
			continue
		}
		if r.Verdict == verdict.Skipped {
			t.Errorf("reference broker/nats: %s is %s: %s", id, r.Verdict, r.Reason)
		}
		runnertest.Undecided(t, "reference broker/nats", r)
	}
	registered := map[string]bool{}
	for _, m := range natsmutants.All() {
		for _, id := range m.MustFail {
			registered[id] = true
		}
	}
	var unregistered []string
	for _, r := range catalog.All("broker") {
		if !registered[r.ID] && !other[r.ID] {
			unregistered = append(unregistered, r.ID)
		}
	}
	killed := map[string][]string{}
	undecided := map[string][]string{} // must fail, left undecided naming the kit's lateness
	for _, m := range natsmutants.All() {
		t.Run(m.Name, func(t *testing.T) {
			only := append(slices.Clone(m.MustFail), unregistered...)
			res := run(t, "broker/mutant-"+m.Name, m.Build, m.MustFail, only...)
			for _, id := range m.MustFail {
				if runnertest.MustFail(t, m.Name, id, res) {
					undecided[id] = append(undecided[id], m.Name)
				}
			}
			for id, r := range res {
				if r.Verdict == verdict.Fail {
					killed[id] = append(killed[id], m.Name)
					if !slices.Contains(m.MustFail, id) {
						t.Logf("also fails %s: %s", id, r.Reason)
						if testing.Verbose() {
							for _, n := range r.Evidence.Notes {
								t.Logf("    %s", n)
							}
						}
					}
				}
			}
		})
	}
	for _, r := range catalog.All("broker") {
		if other[r.ID] {
			continue
		}
		if len(killed[r.ID]) == 0 && len(undecided[r.ID]) > 0 {
			t.Logf("no mutant fails %s in this run: %v left it undecided, naming the kit's lateness", r.ID, undecided[r.ID])
		} else if len(killed[r.ID]) == 0 {
			t.Errorf("no mutant fails %s", r.ID)
		} else {
			t.Logf("%s failed by %v", r.ID, killed[r.ID])
		}
	}
}

// TestBatchMutants is the kill matrix of the atomic batch rules alone (a
// narrow run of what TestMutants checks): the reference passes BR-8.x on
// the embedded server and each batch mutant fails the rules it names.
func TestBatchMutants(t *testing.T) {
	t.Parallel()
	batch := []string{"BR-8.1", "BR-8.2", "BR-8.3"}
	for id, r := range run(t, "broker/nats", nats.Client{}, nil, batch...) {
		if !slices.Contains(batch, id) {
			continue
		}
		if r.Verdict != verdict.Pass {
			t.Errorf("reference broker/nats: %s is %s: %s", id, r.Verdict, r.Reason)
		}
		t.Logf("reference %s: %s %v", id, r.Verdict, r.Evidence.Notes)
	}
	for _, m := range natsmutants.All() {
		if !strings.HasPrefix(m.Name, "batch-") {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			res := run(t, "broker/mutant-"+m.Name, m.Build, m.MustFail, m.MustFail...)
			for _, id := range m.MustFail {
				runnertest.MustFail(t, m.Name, id, res)
				t.Logf("%s: %s", id, res[id].Reason)
			}
		})
	}
}

// TestBatchRulesOnContainers runs the atomic batch rules on a nats-server
// container and on the three-node cluster (streams with three replicas,
// no fault injected: only BR-8.x run): the reference passes them there too.
func TestBatchRulesOnContainers(t *testing.T) {
	t.Parallel()
	containers.Need(t, nats.Image())
	batch := []string{"BR-8.1", "BR-8.2", "BR-8.3"}
	for _, c := range []struct {
		name  string
		start func(context.Context, string, ...nats.Option) (*nats.Target, error)
	}{
		{"broker/nats-container", nats.Run},
		{"broker/nats-cluster", nats.RunCluster},
	} {
		t.Run(c.name, func(t *testing.T) {
			nt, err := c.start(context.Background(), "")
			if err != nil {
				t.Fatalf("starting %s: %v", c.name, err)
			}
			defer nt.Stop()
			tg := registry.BrokerTarget(nt)
			res := runnertest.Killed(c.name, func() { broker.Register(tg.Target, tg.Hooks()) }, batch, nil, t.Logf)
			for _, id := range batch {
				r, ok := res[id]
				if !ok {
					t.Errorf("%s: %s did not run", c.name, id)
					continue
				}
				if r.Verdict != verdict.Pass {
					t.Errorf("%s: %s is %s: %s", c.name, id, r.Verdict, r.Reason)
				}
			}
		})
	}
}
