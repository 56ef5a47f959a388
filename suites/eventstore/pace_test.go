package eventstore_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/eventstore/memory"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/eventstore"
)

// runRule runs one rule against target and returns its result.
func runRule(t *testing.T, name, rule string, target eventstore.Target) verdict.Result {
	t.Helper()
	for _, r := range runner.Run(name, func() { eventstore.Register(target) }, runner.Options{Rules: []string{rule}}) {
		if r.Rule == rule {
			return r
		}
	}
	t.Fatalf("%s: no result", rule)
	return verdict.Result{}
}

// A correct store at 2-5 ms an append: ES-1.17 is skipped after its probe,
// naming its pace, the time it would need and the Timeout that runs it,
// with the figure that says pace; ES-1.18's 66 appends fit and pass.
func TestSlowStoreSkipsLongVersions(t *testing.T) {
	db := memory.NewPaced(2*time.Millisecond, 5*time.Millisecond)
	target := eventstore.Target{Open: func(context.Context) (es.EventStore, error) { return db.Open(), nil }}
	res := runRule(t, "memory-paced", "ES-1.17", target)
	t.Logf("ES-1.17: %s: %s", res.Verdict, res.Reason)
	if res.Verdict != verdict.Skipped {
		t.Fatalf("ES-1.17 on a store at 2-5 ms: %s, want skipped", res.Verdict)
	}
	for _, w := range []string{"appends/s", "need about", "budget of 5s", "Target.Timeout of"} {
		if !strings.Contains(res.Reason, w) {
			t.Errorf("the reason does not say %q: %s", w, res.Reason)
		}
	}
	if _, ok := figure(res, spec.ShortOfPace); !ok {
		t.Errorf("no figure %q", spec.ShortOfPace)
	}
	if v, _ := figure(res, "version reached (aimed at)"); v == nil || strings.HasPrefix(v.(string), "6554") {
		t.Errorf("the skip grew the aggregate to %v", v)
	}
	if res := runRule(t, "memory-paced", "ES-1.18", target); res.Verdict != verdict.Pass {
		t.Errorf("ES-1.18 on a store at 2-5 ms: %s, want pass: %s", res.Verdict, res.Reason)
	}
}

// slowsDown is a correct store that, past its first appends, takes a
// millisecond more for each: the probe passes and the fill falls short.
type slowsDown struct {
	es.EventStore
	n *atomic.Int64
}

func (s slowsDown) Append(ctx context.Context, st es.Stream) error {
	if s.n.Add(1) > 10000 {
		time.Sleep(time.Millisecond)
	}
	return s.EventStore.Append(ctx, st)
}

// A fill that passed its probe and fell short (here the store slowed down;
// a starved kit alike) is unknown naming the version reached, never fail
// nor skipped.
func TestFillShortAfterTheProbeIsUnknown(t *testing.T) {
	db := memory.NewDB()
	var n atomic.Int64
	target := eventstore.Target{Open: func(context.Context) (es.EventStore, error) { return slowsDown{db.Open(), &n}, nil }, Timeout: 3 * time.Second}
	res := runRule(t, "slows-down", "ES-1.17", target)
	t.Logf("ES-1.17: %s: %s", res.Verdict, res.Reason)
	if res.Verdict != verdict.Unknown || !strings.Contains(res.Reason, "at version") || !strings.Contains(res.Reason, "the kit was late") {
		t.Errorf("ES-1.17 on a store that slowed down: %s (%s), want unknown naming the version reached and the kit's lateness", res.Verdict, res.Reason)
	}
}
