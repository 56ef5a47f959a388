package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/onceproof/tck/adapters/api/reference"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/api"
)

// runRule runs one rule against target and returns its result.
func runRule(t *testing.T, name, id string, target api.Target) verdict.Result {
	t.Helper()
	for _, r := range runner.Run(name, func() { api.Register(target) }, runner.Options{Rules: []string{id}}) {
		if r.Rule == id {
			return r
		}
	}
	t.Fatalf("%s did not run", id)
	return verdict.Result{}
}

// API-6.1 on the reference, two replicas over one database, under both
// contracts and several seeds (each draws other rates and other failed
// calls): a service that answers an error whenever its store fails passes.
func TestDependencyFailuresReference(t *testing.T) {
	for _, c := range []api.Contract{api.Reject409, api.Replay} {
		srv, err := reference.Start(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := srv.Replica(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for seed := int64(1); seed <= 4; seed++ {
			res := runRule(t, fmt.Sprintf("reference-%s-%d", c, seed), "API-6.1",
				api.Target{URL: srv.URL(), Replicas: []string{rep.URL()}, Desc: api.Default(c), Seed: seed * 7919})
			if res.Verdict != verdict.Pass {
				t.Errorf("%s, seed %d: %s: %s", c, seed*7919, res.Verdict, res.Reason)
			}
			t.Logf("%s, seed %d: %s; %v", c, seed*7919, res.Verdict, res.Evidence.Figures)
			if !strings.Contains(fmt.Sprint(res.Evidence.Figures), "store calls failed") {
				t.Errorf("%s, seed %d: the evidence does not count the failed calls: %v", c, seed*7919, res.Evidence.Figures)
			}
		}
		if err := rep.Stop(); err != nil {
			t.Error(err)
		}
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	}
}

// A service the kit did not start in its own process has no dependency the
// kit controls: API-6.1 is not applicable, and says why.
func TestDependencyFailuresNotApplicable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	res := runRule(t, "url", "API-6.1", api.Target{URL: srv.URL, Desc: api.Default(api.Reject409)})
	if res.Verdict != verdict.NotApplicable || !strings.Contains(res.Reason, "controls no dependency") {
		t.Errorf("%s: %s, want not-applicable naming the reason", res.Verdict, res.Reason)
	}
}
