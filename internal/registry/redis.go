package registry

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/onceproof/tck/adapters/broker/redis"
	"github.com/onceproof/tck/internal/kithooks"
	redismutants "github.com/onceproof/tck/internal/mutants/redismutants"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/broker"
)

// RedisURLEnv names the variable holding the Redis server the Redis
// targets use when none is named (broker/redis without an address, every
// Redis mutant, and so the self-test).
const RedisURLEnv = "TCK_REDIS_URL"

const redisNeeds = "a redis-server 6.2 or later at " + RedisURLEnv + " or redis://[user:password@]host:port/db (scripts/redis-local.sh starts one)"

func redisBrokers() []row {
	needs := redisNeeds
	if os.Getenv(RedisURLEnv) == "" {
		needs += "; " + RedisURLEnv + " is unset here, so a run without an address starts a " + redis.ServerBinary + " from PATH"
		if !redis.HaveServerBinary() {
			needs += " (not installed here: such a run is unavailable, exit 4)"
		}
	}
	rows := []row{{
		Kind: target.Kind{
			Suite: "broker", Name: "redis",
			Summary:    "Redis Streams through go-redis v9: consumer groups, the pending entries list, XACK, redelivery by XAUTOCLAIM after the ack wait as min-idle-time; no nak, term or max-deliver; producer de-dupe only with XADD IDMP (Redis 8.6+)",
			Needs:      needs + "; Docker and the image " + redis.DefaultImage + " (" + redis.ImageEnv + "; `make images` builds it) for =container",
			AddressEnv: RedisURLEnv,
		},
		modes: []mode{
			{target.External, redisBroker(redisAt(redis.Client{}))},
			{target.Container, redisBroker(func(ctx context.Context, _ target.Ref) (*redis.Target, error) {
				return redis.Run(ctx, "")
			})},
		},
	}}
	// Every broken Redis client, each in front of the real server at
	// TCK_REDIS_URL (or the URL given).
	for _, m := range redismutants.All() {
		rows = append(rows, row{
			Kind: target.Kind{
				Suite: "broker", Name: "mutant-redis-" + m.Name,
				Summary: "mutant: " + m.Defect,
				Needs:   needs,
				Mutant:  true, MustFail: m.MustFail, AddressEnv: RedisURLEnv,
			},
			modes: []mode{{target.External, redisBroker(redisAt(m.Build))}},
			note:  "mutant: " + m.Defect,
		})
	}
	return rows
}

// redisAt reaches the server at the ref's URL, or, with no address
// (TCK_REDIS_URL unset), starts a redis-server of the kit's own from PATH.
func redisAt(client redis.Client) func(ctx context.Context, ref target.Ref) (*redis.Target, error) {
	return func(ctx context.Context, ref target.Ref) (*redis.Target, error) {
		if ref.Address == "" {
			return redis.RunLocal(ctx, redis.WithClient(client))
		}
		cfg, err := ref.Opts.TLS.Config()
		if err != nil {
			return nil, err
		}
		return redis.Open(ctx, ref.Address, redis.WithClient(client), redis.WithTLS(cfg))
	}
}

// redisBroker binds a Redis target, however started, to the broker suite.
// A target named without an address while TCK_REDIS_URL is unset and no
// redis-server is on PATH is unavailable, saying what to do.
func redisBroker(startRedis func(ctx context.Context, ref target.Ref) (*redis.Target, error)) start {
	return brokerStart(func(ctx context.Context, ref target.Ref) (*boundBroker, error) {
		rt, err := startRedis(ctx, ref)
		if errors.Is(err, redis.ErrNoServerBinary) {
			return nil, errors.New("no Redis server: " + RedisURLEnv + " is unset and " + redis.ServerBinary + " is not on PATH; set " + RedisURLEnv + "=redis://host:port/db, name one (" + ref.Key() + "=redis://...), or install redis-server")
		}
		if err != nil {
			return nil, err
		}
		return &boundBroker{info: &rt.Info, stop: rt.Stop, binding: RedisBrokerTarget(rt), config: redisConfig(rt), local: ref.Address == "",
			// The run's profile (redis_profile.go).
			profile: func(_ context.Context, ref target.Ref, t *BrokerBinding, info *target.Info) error {
				return bindRedisProfile(rt, ref, t, info)
			}}, nil
	})
}

// RedisBrokerTarget is the broker suite's view of a Redis target; tests
// that start one themselves bind it with this too. A rule that needs a
// capability Redis lacks is not-applicable with Redis's own reason.
func RedisBrokerTarget(rt *redis.Target) BrokerBinding {
	client, url := rt.Client, rt.URL
	t := BrokerBinding{Target: broker.Target{
		Open: func(ctx context.Context) (mq.Broker, error) { return client.Open(ctx, url) },
		Caps: rt.Caps,
	}}
	t.Private = privateOf(rt.Private)
	t.Lacks = rt.Lacks
	return t
}

// redisConfig is what the target declares and the server is set to.
func redisConfig(rt *redis.Target) map[string]string {
	c, w := rt.Caps, kithooks.DefaultWindows()
	cfg := map[string]string{
		"dedupeWindow":       c.DedupeWindow.String(),
		"ackWait":            w.AckWait.String() + " (XAUTOCLAIM min-idle-time)",
		"tolerance":          w.Tolerance.String(),
		"totalQueueMessages": fmt.Sprint(w.Messages),
		"retentions":         "limits",
	}
	for k, v := range rt.Config {
		if k == "ackWait" {
			continue
		}
		cfg[k] = v
	}
	return cfg
}
