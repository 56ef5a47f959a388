package apimutants_test

import (
	"context"
	"testing"

	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/mutants/apimutants"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/api"
)

// Every mutant fails the rules it lists, run as the registry runs it (its
// own service, the default description, restartable). This is the
// self-test's assertion for this package alone; the race rule gets up to
// three runs, as in the self-test.
func TestMutantsFailTheirRules(t *testing.T) {
	for _, m := range apimutants.All() {
		t.Run(m.Name, func(t *testing.T) {
			srv, err := m.Build.Start(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Stop() })
			target := api.Target{URL: srv.URL(), Desc: apidesc.Default(m.Build.Contract), Restart: srv.Restart}
			for _, id := range m.MustFail {
				var got verdict.Result
				for run := 1; run <= 3 && got.Verdict != verdict.Fail; run++ {
					for _, r := range runner.Run("mutant-"+m.Name, func() { api.Register(target) }, runner.Options{Rules: []string{id}}) {
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
