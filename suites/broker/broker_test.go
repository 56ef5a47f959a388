package broker_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/broker"

	"github.com/onceproof/tck/adapters/registry"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
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

// BenchmarkEmbeddedRun measures what `tck run --suite broker --target
// broker/nats` costs: the wall time of one whole run (target start and stop
// included) and its overhead ratio, wall time divided by the sum of the
// waits the rules need by definition (each rule's "wait by definition"
// figure). The rules wait concurrently, so the ratio is well under 1; the
// ratio to the longest single wait says how close the run is to the floor.
//
//	go test ./suites/broker -run '^$' -bench EmbeddedRun -benchtime 3x
func BenchmarkEmbeddedRun(b *testing.B) {
	var wall, sum, longest time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res := run(b, "broker/nats")
		wall += time.Since(start)
		for _, r := range res {
			if r.Verdict != verdict.Pass {
				b.Fatalf("%s %s: %s", r.Rule, r.Verdict, r.Reason)
			}
			for _, f := range r.Evidence.Figures {
				if f.Name == "wait by definition" {
					w := time.Duration(f.Value.(float64) * float64(time.Second))
					sum += w
					longest = max(longest, w)
				}
			}
		}
	}
	n := float64(b.N)
	b.ReportMetric(wall.Seconds()/n, "s/run")
	b.ReportMetric(sum.Seconds()/n, "s-waits/run")
	b.ReportMetric(wall.Seconds()/sum.Seconds(), "wall/sum-waits")
	b.ReportMetric(wall.Seconds()/n/longest.Seconds(), "wall/longest-wait")
}

// TestBudget: a rule whose declared window does not fit in the run's budget
// is skipped with that reason, never shortened; a filtered run starts only
// the selected rules.
func TestBudget(t *testing.T) {
	ctx := context.Background()
	e, err := nats.StartEmbedded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	open := func(ctx context.Context) (mq.Broker, error) { return nats.Connect(ctx, e.URL(), nats.Options{}) }
	probe, err := open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	caps := probe.Capabilities()
	probe.Close()
	tg := broker.Target{Open: open, Caps: caps, Budget: time.Second}
	res := runner.Run("broker/nats", func() { broker.Register(tg) }, runner.Options{Rules: []string{"BR-1.2", "BR-1.1"}})
	got := map[string]verdict.Result{}
	for _, r := range res {
		got[r.Rule] = r
	}
	if r := got["BR-1.2"]; r.Verdict != verdict.Skipped || !strings.Contains(r.Reason, "time budget") {
		t.Errorf("BR-1.2: %s %s", r.Verdict, r.Reason)
	}
	if r := got["BR-1.1"]; r.Verdict != verdict.Pass {
		t.Errorf("BR-1.1: %s %s", r.Verdict, r.Reason)
	}
	if r := got["BR-2.2"]; r.Verdict != verdict.Skipped {
		t.Errorf("BR-2.2 was not filtered out: %s %s", r.Verdict, r.Reason)
	}
}
