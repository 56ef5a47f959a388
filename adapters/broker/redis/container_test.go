package redis_test

import (
	"context"
	"testing"

	"github.com/onceproof/tck/adapters/broker/redis"
	"github.com/onceproof/tck/internal/containers"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/internal/target"
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
	runnertest.Passes(t, ref.Key(), st.Register)
	if err := st.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	containers.AssertSessionEmpty(t)
}
