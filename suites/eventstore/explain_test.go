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

// neverCloses is the reference store with a Close that closes nothing: a
// closed handle still appends, loads and answers RequestIDExists.
type neverCloses struct{ es.EventStore }

func (neverCloses) Close() error { return nil }

// A store that breaks three checks of one rule (ES-1.10: a closed handle's
// Append, Load and RequestIDExists all succeed) sees all three in one run,
// each naming what the contract expects, and the reason carries neither
// Gomega's layout nor the kit's file:line (those stay in the notes).
func TestEveryFailedCheckOfARuleIsNamed(t *testing.T) {
	db := memory.NewDB()
	target := eventstore.Target{
		Open:    func(context.Context) (es.EventStore, error) { return neverCloses{db.Open()}, nil },
		Timeout: 10 * time.Second,
	}
	var got verdict.Result
	for _, r := range runner.Run("never-closes", func() { eventstore.Register(target) }, runner.Options{Rules: []string{"ES-1.10"}}) {
		if r.Rule == "ES-1.10" {
			got = r
		}
	}
	t.Logf("ES-1.10: %s", got.Reason)
	if got.Verdict != verdict.Fail {
		t.Fatalf("ES-1.10: %s %q, want fail", got.Verdict, got.Reason)
	}
	for _, call := range []string{"Append through a closed handle", "Load through a closed handle", "RequestIDExists through a closed handle"} {
		i := strings.Index(got.Reason, call)
		if i < 0 {
			t.Errorf("ES-1.10's reason does not name %q: %s", call, got.Reason)
			continue
		}
		rest := got.Reason[i:]
		if j := strings.Index(rest[1:], "; ("); j >= 0 {
			rest = rest[:j+1]
		}
		if !strings.Contains(rest, "es.ErrClosed") || !strings.Contains(rest, "got no error") {
			t.Errorf("%q does not say what the contract expects (es.ErrClosed) and what came back: %s", call, rest)
		}
	}
	if !strings.HasPrefix(got.Reason, "3 checks failed:") {
		t.Errorf("ES-1.10's reason does not count its three failed checks: %s", got.Reason)
	}
	for _, boiler := range []string{"Expected", "<nil>", ".go:"} {
		if strings.Contains(got.Reason, boiler) {
			t.Errorf("ES-1.10's reason holds %q: %s", boiler, got.Reason)
		}
	}
	notes := strings.Join(got.Evidence.Notes, "\n")
	if !strings.Contains(notes, "basics.go:") || !strings.Contains(notes, "Expected an error to have occurred") {
		t.Errorf("the notes lost the whole failure and its place in the kit: %s", notes)
	}
}
