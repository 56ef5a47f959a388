package redis_test

import (
	"context"
	"testing"

	"github.com/onceproof/tck/adapters/broker/redis"
	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/internal/verdict"
)

// broker/redis=container on the locally built image (`make images`): the
// rules that apply pass, and nothing of this process is left on the Docker
// host afterwards. Skipped without Docker or the image, failed instead with
// TCK_REQUIRE_DOCKER=1.
func TestContainerPassesBrokerSuite(t *testing.T) {
	containers.Need(t, redis.Image())
	ref, err := target.Parse("broker/redis=container")
	if err != nil {
		t.Fatal(err)
	}
	k, ref, err := registry.Targets().Resolve(ref)
	if err != nil {
		t.Fatal(err)
	}
	st, err := k.Start(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s at %s, %v", st.Info.Version, st.Info.Address, st.Info.Notes)
	passes(t, ref.Key(), st.Register)
	if err := st.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	containers.AssertSessionEmpty(t)
}

// passes runs every broker rule on the target and fails the test on a
// fail. A timed rule that a loaded host left undecided (a make test beside
// two CPU burners) is honest: it gets one rerun, as the self-test gives its
// race rules, and fails the test only when undecided twice.
func passes(t *testing.T, key string, register func()) {
	t.Helper()
	var again []string
	for _, r := range runner.Run(key, register, runner.Options{}) {
		switch r.Verdict {
		case verdict.Fail:
			t.Errorf("%s: %s: %s", r.Rule, r.Verdict, r.Reason)
		case verdict.Unknown:
			t.Logf("%s: %s, run again: %s", r.Rule, r.Verdict, r.Reason)
			again = append(again, r.Rule)
		}
	}
	if len(again) == 0 {
		return
	}
	for _, r := range runner.Run(key, register, runner.Options{Rules: again}) {
		if r.Verdict == verdict.Fail || r.Verdict == verdict.Unknown {
			t.Errorf("%s: %s: %s", r.Rule, r.Verdict, r.Reason)
		}
	}
}
