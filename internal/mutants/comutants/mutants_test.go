// The self-test of these mutants (the reference passes every CO rule,
// each mutant fails its MustFail, every rule is failed by one) is
// internal/selftest's TestConsumerKillMatrix, through the registry as
// `tck selftest` runs it; this package keeps only the power measurement.
package comutants_test

import (
	"context"
	"github.com/onceproof/tck/suites/consumer/embedded"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/adapters/consumer/reference"
	"github.com/onceproof/tck/internal/mutants/comutants"
	"github.com/onceproof/tck/internal/outbox"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/consumer"
)

// sharedNATS starts one NATS JetStream server for the test; every run makes
// topics of its own on it.
func sharedNATS(t *testing.T) func(context.Context) (mq.Broker, error) {
	t.Helper()
	e, err := nats.StartEmbedded(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	return func(ctx context.Context) (mq.Broker, error) { return nats.Connect(ctx, e.URL(), nats.Options{}) }
}

// TestPower runs one rule against one mutant ONCEPROOF_POWER_RUNS times
// (default 1; Ginkgo refuses go test -count) and logs whether the rule
// caught it each time; it asserts nothing. Detection rates are measured by
// suites/consumer/testdata/power.sh:
//
//	ONCEPROOF_POWER=racy-claim/CO-1.5 ONCEPROOF_POWER_RUNS=20 go test -run TestPower -v ./internal/mutants/comutants
func TestPower(t *testing.T) {
	which := os.Getenv("ONCEPROOF_POWER")
	if which == "" {
		t.Skip("set ONCEPROOF_POWER=mutant/rule to measure one rule's power")
	}
	name, rule, _ := strings.Cut(which, "/")
	var design reference.Design
	found := false
	for _, m := range comutants.All() {
		if m.Name == name {
			design, found = m.Build.Design, true
		}
	}
	if name == "reference" {
		design, found = reference.Reference(), true
	}
	if !found {
		t.Fatalf("no mutant %q", name)
	}
	runs, _ := strconv.Atoi(os.Getenv("ONCEPROOF_POWER_RUNS"))
	tgt := consumer.Target{Broker: sharedNATS(t), New: design.Factory(), Declared: design.Declared(), Outbox: outbox.Factory}
	for range max(runs, 1) {
		power(t, tgt, name, rule)
	}
}

func power(t *testing.T, tgt consumer.Target, name, rule string) {
	rs := runner.Run("consumer/power", func() { consumer.Register(tgt, embedded.NATS()) }, runner.Options{Rules: []string{rule}})
	for _, r := range rs {
		if r.Rule == rule {
			verdictWord := "missed"
			if r.Verdict == verdict.Fail {
				verdictWord = "caught"
			}
			t.Logf("POWER %s %s %s %s %.0fms: %s", name, rule, verdictWord, r.Verdict, r.DurationMs, r.Reason)
		}
	}
}
