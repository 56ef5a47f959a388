package eventstore_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/eventstore/memory"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/eventstore"
)

// With one processor an in-memory append runs to its end before the next
// writer starts, so trials are rarely contended. A race rule must then say
// unknown, naming the contended trials it reached and its floor, or pass
// with at least its floor reached (stating the power it has): never pass
// short of the floor, never fail.
func TestOneProcessorIsUnknownNotPass(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	db := memory.NewDB()
	target := eventstore.Target{
		Open: func(context.Context) (es.EventStore, error) { return db.Open(), nil },
		Race: eventstore.RaceConfig{Cap: 300 * time.Millisecond},
	}
	for _, r := range runner.Run("memory", func() { eventstore.Register(target) }, runner.Options{Rules: raceRules}) {
		if r.Verdict == verdict.Skipped {
			continue
		}
		contended, _ := figure(r, "contended trials")
		floor, _ := figure(r, "contended trials floor (fewer at the cap: unknown)")
		t.Logf("%s: %s (contended %v, floor %v) %q", r.Rule, r.Verdict, contended, floor, r.Reason)
		switch r.Verdict {
		case verdict.Unknown:
			if !strings.Contains(r.Reason, "contended trials") || !strings.Contains(r.Reason, "floor") {
				t.Errorf("%s: unknown without the contended trials and the floor: %q", r.Rule, r.Reason)
			}
		case verdict.Pass:
			if c, n := contended.(int), floor.(int); c < n {
				t.Errorf("%s: pass with %d contended trials, below the floor of %d", r.Rule, c, n)
			}
			if !strings.Contains(r.Reason, "would have been caught with 99% probability") {
				t.Errorf("%s: a pass that does not state its power: %q", r.Rule, r.Reason)
			}
		default:
			t.Errorf("%s: %s %q on a correct store", r.Rule, r.Verdict, r.Reason)
		}
	}
}
