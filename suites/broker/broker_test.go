package broker_test

import (
	"context"
	"os"
	"testing"

	"github.com/onceproof/tck/adapters/registry"
	"github.com/onceproof/tck/runner"
	"github.com/onceproof/tck/target"
	"github.com/onceproof/tck/verdict"
)

// run starts a registered broker kind and runs the suite against it.
func run(t testing.TB, key string, rules ...string) []verdict.Result {
	t.Helper()
	ref, err := target.Parse(key)
	if err != nil {
		t.Fatal(err)
	}
	k, ref, err := registry.Targets().Resolve(ref)
	if err != nil {
		t.Fatal(err)
	}
	st, err := k.Start(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	return runner.Run(ref.Key(), st.Register, runner.Options{Rules: rules})
}

// TestReference: embedded NATS passes every BR rule.
func TestReference(t *testing.T) {
	for _, r := range run(t, "broker/nats") {
		t.Logf("%s %s: %s", r.Rule, r.Verdict, r.Reason)
		if testing.Verbose() {
			for _, f := range r.Evidence.Figures {
				t.Logf("    %s = %v %s", f.Name, f.Value, f.Unit)
			}
			for _, h := range r.Evidence.Hazards {
				t.Logf("    hazard: %s", h)
			}
		}
		if r.Verdict != verdict.Pass {
			for _, n := range r.Evidence.Notes {
				t.Logf("    %s", n)
			}
			t.Errorf("%s: %s (%s)", r.Rule, r.Verdict, r.Reason)
		}
	}
}

func TestOneTarget(t *testing.T) {
	key := os.Getenv("BROKER_TARGET")
	if key == "" {
		t.Skip("set BROKER_TARGET=broker/NAME[=ADDRESS]")
	}
	for _, r := range run(t, key) {
		t.Logf("%s %s %.0fms: %s", r.Rule, r.Verdict, r.DurationMs, r.Reason)
	}
}
