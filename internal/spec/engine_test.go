package spec

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// TestRunOverlapsAloneAndRace: the engine runs an Ahead set's rules at the
// same time (two bodies that each wait for the other both pass), an ItAlone
// rule with no other body running, an ItRace rule holding a share of the
// processors; a rule outside the selection is skipped and one the target
// cannot run is not-applicable, each with its reason; the results come in
// the catalog's order.
func TestRunOverlapsAloneAndRace(t *testing.T) {
	var running atomic.Int32
	started := map[string]chan struct{}{"ES-1.1": make(chan struct{}), "ES-1.2": make(chan struct{})}
	meet := func(me, other string) Body {
		return func(r *R) {
			running.Add(1)
			defer running.Add(-1)
			close(started[me])
			select {
			case <-started[other]:
			case <-r.Context().Done():
				r.Expect(false).To(gomega.BeTrue(), me+" ran without "+other)
			}
		}
	}
	s := New("eventstore")
	s.Concurrent = true
	s.Timeout = 10 * time.Second
	s.It("ES-1.2", meet("ES-1.2", "ES-1.1"))
	s.It("ES-1.1", meet("ES-1.1", "ES-1.2"))
	s.ItAlone("ES-1.3", func(r *R) {
		r.Expect(running.Load()).To(gomega.BeZero(), "other bodies running beside an alone rule")
	})
	s.ItRace("ES-1.4", func(r *R) {
		all := int64(ProcessorShares())
		free := processors.TryAcquire(all)
		if free {
			processors.Release(all)
		}
		r.Expect(free).To(gomega.BeFalse(), "a race rule ran without its share of the processors")
	})
	s.It("ES-1.5", func(r *R) { r.Expect(false).To(gomega.BeTrue(), "not selected, never run") })
	needs := catalog.MustLookup("ES-2.1").Needs
	s.It("ES-2.1", func(r *R) {})
	res := s.Run(context.Background(), target.RunOptions{Target: "t", Rules: []string{"ES-1.1", "ES-1.2", "ES-1.3", "ES-1.4", "ES-2.1"}})
	want := map[string]verdict.Verdict{"ES-1.1": verdict.Pass, "ES-1.2": verdict.Pass, "ES-1.3": verdict.Pass, "ES-1.4": verdict.Pass, "ES-1.5": verdict.Skipped, "ES-2.1": verdict.Pass}
	if len(needs) > 0 {
		want["ES-2.1"] = verdict.NotApplicable
	}
	if len(res) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(res), len(want), res)
	}
	for i, r := range res {
		if i > 0 && !catalog.Less(res[i-1].Rule, r.Rule) {
			t.Errorf("results out of the catalog's order: %s before %s", res[i-1].Rule, r.Rule)
		}
		if r.Verdict != want[r.Rule] || r.Target != "t" || r.Reason == "" {
			t.Errorf("%s: %s (%s), want %s", r.Rule, r.Verdict, r.Reason, want[r.Rule])
		}
	}
}

// TestRunInterrupted: a cancelled run starts no rule and says why.
func TestRunInterrupted(t *testing.T) {
	s := New("eventstore")
	s.Concurrent = true
	s.It("ES-1.1", func(r *R) {})
	s.ItAlone("ES-1.3", func(r *R) {})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, r := range s.Run(ctx, target.RunOptions{Target: "t"}) {
		if r.Verdict != verdict.Skipped || r.Reason == "" {
			t.Errorf("%s: %s (%s), want skipped", r.Rule, r.Verdict, r.Reason)
		}
	}
}
