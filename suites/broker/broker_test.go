package broker_test

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/broker"
)

// register runs the suite's Ginkgo entry point against tg, as the CLI does.
func register(tg registry.BrokerBinding, rules ...string) map[string]verdict.Result {
	out := map[string]verdict.Result{}
	for _, r := range runner.Run("broker/nats", func() { broker.Register(tg.Target, tg.Hooks()) }, runner.Options{Rules: rules}) {
		out[r.Rule] = r
	}
	return out
}

// TestCheck: embedded NATS passes every BR rule through Check, the go test
// entry point, and the run leaves no goroutine behind: every workload,
// watch and fault a rule started ended with it.
func TestCheck(t *testing.T) {
	// Checked after the target stopped (cleanups run last in, first out).
	current := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, current) })
	tg := embedded(t, nats.Client{})
	t.Run("nats", func(t *testing.T) { broker.Check(t, tg.Target, tg.Hooks()) })
}

// TestRegister: embedded NATS passes every BR rule through Register, with
// the waits overlapping: a rule's spec measures its own wait.
func TestRegister(t *testing.T) {
	for id, r := range register(embedded(t, nats.Client{})) {
		if r.Verdict == verdict.NotApplicable && strings.Contains(r.Reason, "does not declare the capability") {
			// Another broker's mechanism (the Redis pending list, Kafka's
			// offsets): decided before any workload, so no wall time.
			t.Logf("%s not-applicable on NATS: %s", id, r.Reason)
			continue
		}
		wall, _ := figure(r, "rule wall time")
		t.Logf("%s %s %.0fms (rule wall time %.3fs): %s", id, r.Verdict, r.DurationMs, wall, r.Reason)
		// A watch that must see nothing lasts its whole wait, however
		// late the spec came.
		if w, _ := figure(r, "wait by definition"); wall == nil || wall.(float64) <= 0 || id == "BR-2.2" && wall.(float64) < w.(float64) {
			t.Errorf("%s: rule wall time %v (wait by definition %v)", id, wall, w)
		}
		if r.Verdict != verdict.Pass {
			for _, n := range r.Evidence.Notes {
				t.Logf("    %s", n)
			}
			t.Errorf("%s: %s (%s)", id, r.Verdict, r.Reason)
		}
	}
}

// TestBudget: a rule whose declared window does not fit in the run's budget
// is skipped with that reason, never shortened; a filtered run starts only
// the selected rules.
func TestBudget(t *testing.T) {
	tg := embedded(t, nats.Client{})
	tg.Budget = time.Second
	got := register(tg, "BR-1.2", "BR-1.1")
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
		res := register(embedded(b, nats.Client{}))
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
