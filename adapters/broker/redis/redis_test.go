package redis_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/onceproof/tck/adapters/broker/redis"
	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/registry"
	"github.com/onceproof/tck/internal/runner/runnertest"
	"github.com/onceproof/tck/suites/broker"
)

// serverURL is the Redis server the tests use: TCK_REDIS_URL. Without it
// the test is skipped, saying so; with TCK_REQUIRE_REDIS=1 (CI) it fails.
func serverURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv(registry.RedisURLEnv)
	if u == "" {
		if os.Getenv("TCK_REQUIRE_REDIS") == "1" {
			t.Fatalf("TCK_REQUIRE_REDIS=1 but %s is unset (eval \"$(scripts/redis-local.sh)\" starts a server)", registry.RedisURLEnv)
		}
		t.Skipf("no Redis server: %s is unset (eval \"$(scripts/redis-local.sh)\" starts one)", registry.RedisURLEnv)
	}
	return u
}

// The broker suite against the real server: every rule that applies
// passes (a fail fails the test, as does an unknown left after the reruns
// unless it names the kit's lateness), the others are
// not applicable with Redis's reason.
func TestBrokerSuite(t *testing.T) {
	rt, err := redis.Open(context.Background(), serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop()
	t.Logf("%s, config %v, notes %v", rt.Version, rt.Config, rt.Notes)
	tg := registry.RedisBrokerTarget(rt)
	runnertest.Passes(t, "broker/redis", func() { broker.Register(tg.Target, tg.Hooks()) })
}

// With no URL the kit starts a redis-server of its own from PATH: the suite
// passes on it, BR-3.1 included (a rule's own server, SIGKILLed and
// restarted), and nothing of it is left afterwards.
func TestLocalServerPassesBrokerSuite(t *testing.T) {
	if !redis.HaveServerBinary() {
		if os.Getenv("TCK_REQUIRE_REDIS") == "1" {
			t.Fatalf("TCK_REQUIRE_REDIS=1 but %s is not on PATH", redis.ServerBinary)
		}
		t.Skipf("%s is not on PATH", redis.ServerBinary)
	}
	rt, err := redis.RunLocal(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rt.Private == nil {
		t.Fatal("a local server declares no restartable server of a rule's own")
	}
	// Decided, not broker.Check: on a loaded host a timed rule can be
	// honestly undecided once, its reason naming the kit's lateness; it
	// is run again (at most runnertest.Runs times), as in TestBrokerSuite.
	tg := registry.RedisBrokerTarget(rt)
	t.Run("suite", func(t *testing.T) {
		runnertest.Passes(t, "broker/redis", func() { broker.Register(tg.Target, tg.Hooks()) })
	})
	if err := rt.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	// Nothing of the local servers: no process, no directory (the
	// registry may also hold the session's container sweep, armed by a
	// container test of this binary; that is not this target's).
	for _, left := range leftovers.Pending() {
		if strings.Contains(left, "redis-server") || strings.Contains(left, "tck-redis") {
			t.Errorf("left behind: %s", left)
		}
	}
}
