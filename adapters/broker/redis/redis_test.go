package redis_test

import (
	"context"
	"os"
	"testing"

	"github.com/onceproof/tck/adapters/broker/redis"
	"github.com/onceproof/tck/adapters/registry"
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
// passes (a fail or unknown fails its subtest), the others are skipped
// with Redis's reason.
func TestBrokerSuite(t *testing.T) {
	rt, err := redis.URLTarget(context.Background(), serverURL(t), redis.Client{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop()
	t.Logf("%s, config %v, notes %v", rt.Version, rt.Config, rt.Notes)
	broker.Check(t, registry.RedisBrokerTarget(rt))
}
