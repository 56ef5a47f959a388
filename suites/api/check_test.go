package api_test

import (
	"context"
	"testing"

	"github.com/onceproof/tck/adapters/api/reference"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/api"
)

// The reference service conforms under both contracts, restart included.
func TestReference(t *testing.T) {
	for _, c := range []api.Contract{api.Reject409, api.Replay} {
		t.Run(string(c), func(t *testing.T) {
			srv, err := reference.Start(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := srv.Stop(); err != nil {
					t.Error(err)
				}
			})
			if err := api.Probe(context.Background(), srv.URL(), api.Default(c)); err != nil {
				t.Fatal(err)
			}
			// A 10% power target: this checks the mechanics and stays
			// decided on a loaded runner; tck run uses the full target.
			api.Check(t, api.Target{URL: srv.URL(), Desc: api.Default(c), Restart: srv.Restart, Race: api.RaceConfig{Power: 0.1}})
		})
	}
}

// A refusal lacking a member the description declares (errors.fields)
// fails API-4.1; one it has passes.
func TestRefusalMembersDeclared(t *testing.T) {
	srv, err := reference.Start(context.Background(), api.Reject409)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	for field, want := range map[string]verdict.Verdict{"title": verdict.Pass, "stage": verdict.Fail} {
		d := api.Default(api.Reject409)
		d.Errors.Fields = []string{field}
		var got verdict.Result
		for _, r := range runner.Run("reference", func() { api.Register(api.Target{URL: srv.URL(), Desc: d}) }, runner.Options{Rules: []string{"API-4.1"}}) {
			if r.Rule == "API-4.1" {
				got = r
			}
		}
		if got.Verdict != want {
			t.Errorf("errors.fields [%s]: %s %q, want %s", field, got.Verdict, got.Reason, want)
		}
	}
}
