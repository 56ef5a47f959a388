package rabbitmutants_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/onceproof/tck/adapters/broker/rabbitmq"
	"github.com/onceproof/tck/internal/mutants/rabbitmutants"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// run starts key through the registry, as `tck run` and the self-test do
// (a rabbitmq-server of the kit's own when TCK_RABBITMQ_URL is unset), and
// runs the broker suite on rules.
// A rule the mutant must fail (mustFail) that did not is run again
// (runnertest.Killed), as is any rule left unknown.
func run(t *testing.T, key string, mustFail []string, rules ...string) map[string]verdict.Result {
	t.Helper()
	k, ref, err := registry.Targets().Resolve(target.Ref{Suite: "broker", Name: key})
	if err != nil {
		t.Fatal(err)
	}
	st, err := k.Start(context.Background(), ref)
	if err != nil {
		t.Fatalf("starting %s: %v", key, err)
	}
	defer st.Stop()
	return runnertest.Killed(key, st.Register, rules, mustFail, t.Logf)
}

// TestMutants runs every RabbitMQ mutant on the rules it must fail, and the
// real adapter on the same rules: each mutant fails them, the adapter
// passes them, and every BR-7 rule is failed by a mutant.
func TestMutants(t *testing.T) {
	if os.Getenv(registry.RabbitMQURLEnv) == "" && !rabbitmq.HaveServerBinary() {
		if os.Getenv("TCK_REQUIRE_RABBITMQ") == "1" {
			t.Fatalf("TCK_REQUIRE_RABBITMQ=1 but %s is unset and %s is not on PATH", registry.RabbitMQURLEnv, rabbitmq.ServerBinary)
		}
		t.Skipf("no RabbitMQ: %s is unset and %s is not on PATH", registry.RabbitMQURLEnv, rabbitmq.ServerBinary)
	}
	var (
		mu     sync.Mutex
		killed = map[string]bool{}
		all    []string
	)
	for _, m := range rabbitmutants.All() {
		all = append(all, m.MustFail...)
	}
	// The mutants and the adapter share one rabbitmq-server of the kit's
	// (RunLocal), each under its own name prefix, as in tck selftest: the
	// runs mostly wait on the broker's timers, so they run side by side (at
	// most -parallel at once), and the group returns once all are done.
	t.Run("group", func(t *testing.T) {
		for _, m := range rabbitmutants.All() {
			t.Run(m.Name, func(t *testing.T) {
				t.Parallel()
				res := run(t, "mutant-rabbitmq-"+m.Name, m.MustFail, m.MustFail...)
				for _, id := range m.MustFail {
					runnertest.MustFail(t, m.Name, id, res)
					if res[id].Verdict == verdict.Fail {
						mu.Lock()
						killed[id] = true
						mu.Unlock()
					}
				}
			})
		}
		t.Run("rabbitmq", func(t *testing.T) {
			t.Parallel()
			res := run(t, "rabbitmq", nil, all...)
			for _, id := range all {
				if r := res[id]; r.Verdict != verdict.Pass && !runnertest.Late(r) {
					t.Errorf("broker/rabbitmq: %s is %s, want pass: %s", id, r.Verdict, r.Reason)
				} else if r.Verdict != verdict.Pass {
					runnertest.Undecided(t, "broker/rabbitmq", r)
				}
			}
		})
	})
	for _, id := range []string{"BR-6.1", "BR-7.1", "BR-7.2", "BR-7.3", "BR-7.4", "BR-7.5"} {
		if !killed[id] {
			t.Errorf("%s is failed by no RabbitMQ mutant", id)
		}
	}
}
