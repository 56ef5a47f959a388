package kafkamutants_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/onceproof/tck/adapters/broker/kafka"
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/mutants/kafkamutants"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/broker"
)

// run starts an embedded kfake target reached through client and runs the
// suite (only: those rules; none: every rule) against it, as `tck run` does.
// A rule the mutant must fail (mustFail) that did not is run again
// (runnertest.Killed), as is any rule left unknown.
func run(t *testing.T, name string, client kafka.Client, mustFail []string, only ...string) map[string]verdict.Result {
	t.Helper()
	kt, err := kafka.RunEmbedded(context.Background(), kafka.WithClient(client))
	if err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	defer kt.Stop()
	tg := registry.KafkaBrokerTarget(kt)
	return runnertest.Killed(name, func() { broker.Register(tg.Target, tg.Hooks()) }, only, mustFail, t.Logf)
}

// TestMutants: the reference passes every BR rule that applies to Kafka,
// each Kafka mutant fails its MustFail ids, and every BR-5 rule is failed
// by at least one of them. A mutant runs its MustFail ids and any BR-5 rule
// no mutant is registered to fail (a whole run of each would only find
// incidental failures).
func TestMutants(t *testing.T) {
	for id, r := range run(t, "broker/kafka", kafka.Client{}, nil) {
		if r.Verdict == verdict.Skipped {
			t.Errorf("reference broker/kafka: %s is %s: %s", id, r.Verdict, r.Reason)
		}
		runnertest.Undecided(t, "reference broker/kafka", r)
		if r.Verdict == verdict.NotApplicable && r.Reason == "" {
			t.Errorf("reference broker/kafka: %s is not-applicable without a reason", id)
		}
	}
	var unregistered []string
	for _, r := range catalog.All("broker") {
		if strings.HasPrefix(r.ID, "BR-5.") && !slices.ContainsFunc(kafkamutants.All(), func(m kafkamutants.Mutant) bool { return slices.Contains(m.MustFail, r.ID) }) {
			unregistered = append(unregistered, r.ID)
		}
	}
	killed := map[string][]string{}
	undecided := map[string][]string{} // must fail, left undecided naming the kit's lateness
	for _, m := range kafkamutants.All() {
		t.Run(m.Name, func(t *testing.T) {
			res := run(t, "broker/mutant-kafka-"+m.Name, m.Build, m.MustFail, append(slices.Clone(m.MustFail), unregistered...)...)
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
					}
				}
			}
		})
	}
	for _, r := range catalog.All("broker") {
		if len(r.ID) > 4 && r.ID[:5] == "BR-5." && len(killed[r.ID]) == 0 && len(undecided[r.ID]) > 0 {
			t.Logf("no Kafka mutant fails %s in this run: %v left it undecided, naming the kit's lateness", r.ID, undecided[r.ID])
		} else if len(r.ID) > 4 && r.ID[:5] == "BR-5." && len(killed[r.ID]) == 0 {
			t.Errorf("no Kafka mutant fails %s", r.ID)
		}
		if len(killed[r.ID]) > 0 {
			t.Logf("%s failed by %v", r.ID, killed[r.ID])
		}
	}
}

// runShare is run on a share-group target (broker/kafka-share).
func runShare(t *testing.T, name string, client kafka.Client, mustFail []string, only ...string) map[string]verdict.Result {
	t.Helper()
	share := kafka.KitShare
	if client.Options.Share != nil {
		share = *client.Options.Share
	}
	kt, err := kafka.RunEmbedded(context.Background(), kafka.WithClient(client), kafka.WithShare(share))
	if err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	defer kt.Stop()
	tg := registry.KafkaShareBrokerTarget(kt)
	return runnertest.Killed(name, func() { broker.Register(tg.Target, tg.Hooks()) }, only, mustFail, t.Logf)
}

// TestShareMutants: the share-group reference passes the BR-9 rules, each
// share mutant fails its MustFail ids, and every BR-9 rule is failed by at
// least one of them.
func TestShareMutants(t *testing.T) {
	var br9 []string
	for _, r := range catalog.All("broker") {
		if strings.HasPrefix(r.ID, "BR-9.") {
			br9 = append(br9, r.ID)
		}
	}
	ref := runShare(t, "broker/kafka-share", kafka.Client{}, nil, br9...)
	for _, id := range br9 {
		r := ref[id]
		runnertest.Undecided(t, "reference broker/kafka-share", r)
		if r.Verdict == verdict.NotApplicable || r.Verdict == verdict.Skipped {
			t.Errorf("reference broker/kafka-share: %s is %s: %s", id, r.Verdict, r.Reason)
		}
	}
	killed := map[string][]string{}
	for _, m := range kafkamutants.Share() {
		t.Run(m.Name, func(t *testing.T) {
			res := runShare(t, "broker/mutant-kafka-"+m.Name, m.Build, m.MustFail, m.MustFail...)
			for _, id := range m.MustFail {
				runnertest.MustFail(t, m.Name, id, res)
			}
			for id, r := range res {
				if r.Verdict == verdict.Fail {
					killed[id] = append(killed[id], m.Name)
					t.Logf("%s fails %s: %s", m.Name, id, r.Reason)
				}
			}
		})
	}
	for _, id := range br9 {
		if len(killed[id]) == 0 {
			t.Errorf("no share mutant fails %s", id)
		}
	}
}
