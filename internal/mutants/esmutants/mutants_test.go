package esmutants_test

import (
	"context"
	"testing"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/mutants/esmutants"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/suites/eventstore"
	"github.com/onceproof/tck/internal/verdict"
)

// Every mutant fails the rules it lists, run as the registry runs it (a
// fresh database, handles opened on it, its declared capabilities). This
// is the self-test's assertion for this package alone: it does not need
// the registry, which links every suite. A race rule gets up to three runs,
// as in the self-test (internal/selftest, redecide).
func TestMutantsFailTheirRules(t *testing.T) {
	for _, m := range esmutants.All() {
		t.Run(m.Name, func(t *testing.T) {
			db := m.Build.NewDB()
			target := eventstore.Target{Open: func(context.Context) (es.EventStore, error) { return db.Open(), nil }, Caps: m.Build.Caps()}
			for _, id := range m.MustFail {
				var got verdict.Result
				for run := 1; run <= 3 && got.Verdict != verdict.Fail; run++ {
					for _, r := range runner.Run("mutant-"+m.Name, func() { eventstore.Register(target) }, runner.Options{Rules: []string{id}}) {
						if r.Rule == id {
							got = r
						}
					}
				}
				if got.Verdict != verdict.Fail {
					t.Errorf("%s: %s %q, want fail", id, got.Verdict, got.Reason)
				} else {
					t.Logf("%s: fail: %s", id, got.Reason)
				}
			}
		})
	}
}
