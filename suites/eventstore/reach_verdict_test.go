package eventstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/eventstore/memory"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/mutants/esmutants"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/eventstore"
)

// runReach runs ES-4.3 alone against target.
func runReach(t *testing.T, name string, target eventstore.Target) verdict.Result {
	t.Helper()
	for _, r := range runner.Run(name, func() { eventstore.Register(target) }, runner.Options{Rules: []string{"ES-4.3"}}) {
		if r.Rule == "ES-4.3" {
			t.Logf("ES-4.3 on %s: %s: %s", name, r.Verdict, r.Reason)
			return r
		}
	}
	t.Fatal("ES-4.3 did not run")
	return verdict.Result{}
}

// A store that forgets the oldest request ids fails ES-4.3 with a reason
// that names the request id, its age and the ids stored after it. The
// 3 s time to live, not the LRU: its kill does not depend on how many
// appends a loaded host lets the kit make.
func TestReachFailureNamesAgeAndIDsAfter(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: ES-4.3 takes 6 s")
	}
	var m esmutants.Mutant
	for _, x := range esmutants.All() {
		if x.Name == "request-id-ttl-3s" {
			m = x
		}
	}
	db := m.Build.NewDB()
	got := runReach(t, m.Name, eventstore.Target{Open: func(context.Context) (es.EventStore, error) { return db.Open(), nil }, Seed: 7})
	if got.Verdict != verdict.Fail {
		t.Fatalf("%s %q, want fail", got.Verdict, got.Reason)
	}
	for _, want := range []string{"request id ", " s old with ", " request ids stored after it", "was accepted, want es.DuplicateRequestIDError", "seed 7"} {
		if !strings.Contains(got.Reason, want) {
			t.Errorf("the reason does not say %q: %s", want, got.Reason)
		}
	}
}

// slow is the reference store with appends of 5 ms.
type slow struct{ es.EventStore }

func (s slow) Append(ctx context.Context, st es.Stream) error {
	time.Sleep(5 * time.Millisecond)
	return s.EventStore.Append(ctx, st)
}

// A deadline that leaves ES-4.3 less time and fewer ids than ES-4.1
// reaches makes it unknown, not pass: it could claim nothing.
func TestReachTooShortIsUnknown(t *testing.T) {
	db := memory.NewDB()
	got := runReach(t, "slow", eventstore.Target{Open: func(context.Context) (es.EventStore, error) { return slow{db.Open()}, nil }, Timeout: 2 * time.Second})
	if got.Verdict != verdict.Unknown {
		t.Fatalf("%s %q, want unknown", got.Verdict, got.Reason)
	}
}
