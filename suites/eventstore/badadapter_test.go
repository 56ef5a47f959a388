package eventstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/eventstore/memory"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/eventstore"
)

// misbehaving wraps the reference and panics in Append or hangs in Load
// (ignoring its context, as a wedged driver would).
type misbehaving struct {
	es.EventStore
	panics, hangs bool
}

func (m misbehaving) Append(ctx context.Context, s es.Stream) error {
	if m.panics {
		panic("adapter bug: nil map")
	}
	return m.EventStore.Append(ctx, s)
}

func (m misbehaving) Load(ctx context.Context, a es.AggregateID, from, to int) ([]es.Stream, error) {
	if m.hangs {
		select {} // never returns
	}
	return m.EventStore.Load(ctx, a, from, to)
}

func runWith(t *testing.T, m misbehaving, rules ...string) map[string]verdict.Result {
	db := memory.NewDB()
	target := eventstore.Target{
		Open:    func(context.Context) (es.EventStore, error) { m.EventStore = db.Open(); return m, nil },
		Timeout: time.Second,
		Race:    eventstore.RaceConfig{Cap: 100 * time.Millisecond},
	}
	out := map[string]verdict.Result{}
	for _, r := range runner.Run("misbehaving", func() { eventstore.Register(target) }, runner.Options{Rules: rules}) {
		out[r.Rule] = r
	}
	return out
}

func TestPanickingAdapterFailsTheRuleAndTheRunGoesOn(t *testing.T) {
	got := runWith(t, misbehaving{panics: true}, "ES-1.1", "ES-2.1", "ES-1.2")
	for _, id := range []string{"ES-1.1", "ES-2.1"} {
		r := got[id]
		if r.Verdict == verdict.Pass || r.Verdict == verdict.Skipped {
			t.Errorf("%s: verdict %s with a panicking Append", id, r.Verdict)
		}
		if !strings.Contains(r.Reason+strings.Join(r.Evidence.Notes, " "), "adapter bug: nil map") {
			t.Errorf("%s: the panic is not in the evidence: %q %v", id, r.Reason, r.Evidence.Notes)
		}
	}
	if got["ES-1.2"].Verdict != verdict.Pass {
		t.Errorf("the rule after the panic did not run: %+v", got["ES-1.2"])
	}
}

func TestHangingAdapterIsUnknownAndTheRunGoesOn(t *testing.T) {
	got := runWith(t, misbehaving{hangs: true}, "ES-1.2", "ES-1.8")
	r := got["ES-1.2"]
	if r.Verdict != verdict.Unknown || !strings.Contains(r.Reason, "deadline") {
		t.Errorf("ES-1.2 with a hanging Load: %s %q, want unknown naming the deadline", r.Verdict, r.Reason)
	}
	if got["ES-1.8"].Verdict != verdict.Pass {
		t.Errorf("the rule after the hang did not run: %+v", got["ES-1.8"])
	}
}
