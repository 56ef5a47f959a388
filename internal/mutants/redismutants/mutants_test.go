package redismutants_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/mutants/redismutants"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// run starts key against the Redis server at url through the registry, as
// `tck run` and the self-test do, and runs the broker suite (with only,
// just those rules).
// A rule the mutant must fail (mustFail) that did not is run again
// (runnertest.Killed), as is any rule left unknown.
func run(t *testing.T, key, url string, mustFail []string, only ...string) map[string]verdict.Result {
	t.Helper()
	ref, err := target.Parse(key + "=" + url)
	if err != nil {
		t.Fatal(err)
	}
	k, ref, err := registry.Targets().Resolve(ref)
	if err != nil {
		t.Fatal(err)
	}
	st, err := k.Start(context.Background(), ref)
	if err != nil {
		t.Fatalf("starting %s: %v", key, err)
	}
	defer st.Stop()
	return runnertest.Killed(key, st.Register, only, mustFail, t.Logf)
}

// TestMutants runs the real broker/redis and every Redis mutant through the
// suite against TCK_REDIS_URL (a mutant runs its MustFail ids and any BR-4
// rule no mutant is registered to fail; the rest of a whole run would only
// find incidental failures):
// the real adapter passes every BR-4 rule and fails none, each mutant fails
// its MustFail ids, and every BR-4 rule is failed by at least one mutant.
func TestMutants(t *testing.T) {
	url := os.Getenv(registry.RedisURLEnv)
	if url == "" {
		if os.Getenv("TCK_REQUIRE_REDIS") == "1" {
			t.Fatalf("TCK_REQUIRE_REDIS=1 but %s is unset", registry.RedisURLEnv)
		}
		t.Skipf("no Redis server: %s is unset (eval \"$(scripts/redis-local.sh)\" starts one)", registry.RedisURLEnv)
	}
	for id, r := range run(t, "broker/redis", url, nil) {
		runnertest.Undecided(t, "broker/redis", r)
		if catalog.MustLookup(id).Needs != nil && slices.Contains(catalog.MustLookup(id).Needs, catalog.CapBrokerPendingList) && r.Verdict != verdict.Pass && !runnertest.Late(r) {
			t.Errorf("broker/redis: %s is %s: %s", id, r.Verdict, r.Reason)
		}
	}
	pending := []string{"BR-4.1", "BR-4.2", "BR-4.3"}
	var unregistered []string
	for _, id := range pending {
		if !slices.ContainsFunc(redismutants.All(), func(m redismutants.Mutant) bool { return slices.Contains(m.MustFail, id) }) {
			unregistered = append(unregistered, id)
		}
	}
	killed := map[string][]string{}
	undecided := map[string][]string{} // must fail, left undecided naming the kit's lateness
	for _, m := range redismutants.All() {
		t.Run(m.Name, func(t *testing.T) {
			only := append(slices.Clone(m.MustFail), unregistered...)
			res := run(t, "broker/mutant-redis-"+m.Name, url, m.MustFail, only...)
			for _, id := range m.MustFail {
				if runnertest.MustFail(t, m.Name, id, res) {
					undecided[id] = append(undecided[id], m.Name)
				}
			}
			for id, r := range res {
				if r.Verdict == verdict.Fail {
					killed[id] = append(killed[id], m.Name)
					if !slices.Contains(m.MustFail, id) {
						t.Logf("also fails %s: %s", id, r.Reason)
					}
				}
			}
		})
	}
	for _, id := range pending {
		if len(killed[id]) == 0 && len(undecided[id]) > 0 {
			t.Logf("no Redis mutant fails %s in this run: %v left it undecided, naming the kit's lateness", id, undecided[id])
		} else if len(killed[id]) == 0 {
			t.Errorf("no Redis mutant fails %s", id)
		} else {
			t.Logf("%s failed by %v", id, killed[id])
		}
	}
}
