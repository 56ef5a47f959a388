package eventstore_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/onceproof/tck/adapters/eventstore/memory"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/eventstore"
)

// timingOut is a correct store whose appends stop answering after the
// first few (a loaded database past its deadline).
type timingOut struct {
	es.EventStore
	n *atomic.Int64
}

func (s timingOut) Append(ctx context.Context, st es.Stream) error {
	if s.n.Add(1) > 5 {
		return context.DeadlineExceeded
	}
	return s.EventStore.Append(ctx, st)
}

// A store that stops answering during ES-1.15 is unknown, not failed: a
// deadline missed is no evidence that it merged two ids.
func TestNoAnswerIsUnknown(t *testing.T) {
	db := memory.NewDB()
	var n atomic.Int64
	target := eventstore.Target{Open: func(context.Context) (es.EventStore, error) {
		return timingOut{db.Open(), &n}, nil
	}}
	for _, r := range runner.Run("timing-out", func() { eventstore.Register(target) }, runner.Options{Rules: []string{"ES-1.15"}}) {
		if r.Rule != "ES-1.15" {
			continue
		}
		if r.Verdict != verdict.Unknown || !strings.Contains(r.Reason, "got no answer") {
			t.Errorf("ES-1.15 on a store that stops answering: %s: %s, want unknown naming the call without an answer", r.Verdict, r.Reason)
		}
		return
	}
	t.Fatal("ES-1.15 did not run")
}
