package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceproof/tck/adapters/broker/kafka"
	"github.com/onceproof/tck/adapters/broker/redis"
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/mutants/kafkamutants"
	"github.com/onceproof/tck/internal/mutants/redismutants"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/broker"
)

// The certification references and mutants (issue 38): Kafka and Redis
// certification reads a team's own server, which the self-test has not, so
// each starts a server of the kit's own, puts on it the topic (stream key)
// and group the built-in profile below declares, as a team's pipeline would
// have them, and certifies it with that profile (BR-6.1 only). The
// reference leaves the server as declared: BR-6.1 passes. Each mutant
// changes one readable setting behind the profile: BR-6.1 must fail naming
// it, which proves the comparisons able to fail.

// kafkaCertifyProfile is the profile broker/kafka-certify and its mutants
// are certified against.
const kafkaCertifyProfile = `schema: onceproof.profile/v1
name: selftest-kafka-certify
brokers:
  - name: events
    kind: kafka
    streams:
      - name: orders
        maxAge: 24h
        replicas: 1
        kafka:
          cleanupPolicy: delete
          minInsyncReplicas: 1
        consumers:
          - name: billing
`

// redisCertifyProfile is the profile broker/redis-certify and its mutants
// are certified against; the kit's own redis-server runs with these
// persistence settings (redis.RunLocal).
const redisCertifyProfile = `schema: onceproof.profile/v1
name: selftest-redis-certify
brokers:
  - name: cache
    kind: redis
    redis:
      appendOnly: true
      appendFsync: always
      maxmemoryPolicy: noeviction
    streams:
      - name: orders
        consumers:
          - name: workers
            redis:
              consumers: [w1]
              claimMinIdle: 2s
`

const certifyOnly = "a certification target runs only BR-6.1 (the settings of a server the kit set up as a team's, compared with a built-in profile); the rule's other behaviour is broker/%s's"

// onlyCertify marks every broker rule but BR-6.1 not-applicable.
func onlyCertify(product string) map[string]string {
	na := map[string]string{}
	for _, r := range catalog.All("broker") {
		if r.ID != "BR-6.1" {
			na[r.ID] = fmt.Sprintf(certifyOnly, product)
		}
	}
	return na
}

func kafkaCertifyRows() []row {
	rows := []row{{
		Kind: target.Kind{
			Suite: "broker", Name: "kafka-certify",
			Summary: "certification reference (BR-6.1 only): an embedded kfake holding the topic and group of a built-in profile as declared; the Kafka certification mutants change one setting or the group position of it behind the profile",
			Needs:   "nothing (embedded kfake, an emulator)",
			// BR-6.1 must pass here as the mutants below must fail it.
			Reference: true,
		},
		modes: []mode{{target.Embedded, kafkaCertify(nil)}},
	}}
	for _, m := range kafkamutants.Certification() {
		rows = append(rows, row{
			Kind: target.Kind{
				Suite: "broker", Name: "mutant-kafka-" + m.Name,
				Summary: "mutant: " + m.Defect,
				Needs:   "nothing",
				Mutant:  true, MustFail: m.MustFail,
			},
			modes: []mode{{target.Embedded, kafkaCertify(m.Build)}},
			note:  "mutant: " + m.Defect,
		})
	}
	return rows
}

// kafkaCertify starts an embedded kfake, creates the built-in profile's
// topic and commits its group at the log start, applies drift (nil: none)
// and binds the profile as on the team's cluster.
func kafkaCertify(drift kafkamutants.Drift) start {
	return func(ctx context.Context, ref target.Ref) (*target.Started, error) {
		p, err := profile.Parse("selftest-kafka-certify.yaml", []byte(kafkaCertifyProfile))
		if err != nil {
			return nil, err
		}
		d, err := DeclaredKafka(p, true)
		if err != nil {
			return nil, err
		}
		kt, err := kafka.RunEmbedded(ctx)
		if err != nil {
			return nil, target.Unavailable(ref, err)
		}
		opts := kt.Client.Options
		if err := seedKafka(ctx, opts.Seeds, d.Streams[0], drift); err != nil {
			_ = kt.Stop()
			return nil, target.Unavailable(ref, fmt.Errorf("setting up the certified topic: %w", err))
		}
		t := KafkaBrokerTarget(kt)
		t.Seed = ref.Opts.Seed
		t.Declared = d
		t.Inspect = func(ctx context.Context) (mq.Inspector, error) { return kafka.Inspect(ctx, opts) }
		t.Budget = DefaultMaxWait
		t.NotApplicable = onlyCertify("kafka")
		info := target.Info{
			Name: ref.Key(), Suite: ref.Suite, Mode: ref.Mode(), Address: target.Redact(kt.Address),
			Version: kt.Version, Emulator: kt.Emulator, Notes: kt.Notes,
			Config: map[string]string{"profile": d.Source, "declared topic orders": settingsText(d.Streams[0].Topic.Settings)},
		}
		return &target.Started{
			Info:     info,
			Rules:    func() target.RuleSet { return spec.Collect(broker.Register, t.Target, t.Hooks()) },
			Register: func() { broker.Register(t.Target, t.Hooks()) },
			Broker:   t.Open,
			Stop:     kt.Stop,
		}, nil
	}
}

// seedKafka creates s's topic with its declared configs and commits each
// declared group at offset 0 (the log start: nothing passed over), as a
// team's pipeline would have them, then applies drift.
func seedKafka(ctx context.Context, seeds []string, s kithooks.DeclaredStream, drift kafkamutants.Drift) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	set := s.Topic.Settings
	cfg := map[string]*string{}
	for _, k := range []string{"retention.ms", "cleanup.policy", "min.insync.replicas"} {
		v := set[k]
		cfg[k] = &v
	}
	rs, err := adm.CreateTopic(ctx, 1, 1, cfg, s.Topic.Name)
	if err == nil {
		err = rs.Err
	}
	if err != nil {
		return err
	}
	for _, c := range s.Consumers {
		o := kadm.Offsets{}
		o.Add(kadm.Offset{Topic: s.Topic.Name, Partition: 0, At: 0, LeaderEpoch: -1})
		r, err := adm.CommitOffsets(ctx, c.Config.Group, o)
		if err == nil {
			err = r.Error()
		}
		if err != nil {
			return err
		}
		if drift != nil {
			if err := drift(ctx, adm, s.Topic.Name, c.Config.Group); err != nil {
				return err
			}
			drift = nil
		}
	}
	if drift != nil {
		return drift(ctx, adm, s.Topic.Name, "")
	}
	return nil
}

func redisCertifyRows() []row {
	needs := "a " + redis.ServerBinary + " on PATH: the settings are changed on a server of the kit's own, never on TCK_REDIS_URL's"
	rows := []row{{
		Kind: target.Kind{
			Suite: "broker", Name: "redis-certify",
			Summary: "certification reference (BR-6.1 only): a redis-server of the kit's own holding the stream key and group of a built-in profile as declared; the Redis certification mutants change one setting of it behind the profile",
			Needs:   needs,
			// BR-6.1 must pass here as the mutants below must fail it.
			Reference: true,
		},
		modes: []mode{{target.Embedded, redisCertify(nil)}},
	}}
	for _, m := range redismutants.Certification() {
		rows = append(rows, row{
			Kind: target.Kind{
				Suite: "broker", Name: "mutant-redis-" + m.Name,
				Summary: "mutant: " + m.Defect,
				Needs:   needs,
				Mutant:  true, MustFail: m.MustFail,
			},
			modes: []mode{{target.Embedded, redisCertify(m.Build)}},
			note:  "mutant: " + m.Defect,
		})
	}
	return rows
}

// redisCertify starts a redis-server of the kit's own, puts on it the
// built-in profile's stream key and group with a consumer that has read
// one of three entries, applies drift (nil: none) and binds the profile
// as on the team's server.
func redisCertify(drift redismutants.Drift) start {
	return func(ctx context.Context, ref target.Ref) (*target.Started, error) {
		p, err := profile.Parse("selftest-redis-certify.yaml", []byte(redisCertifyProfile))
		if err != nil {
			return nil, err
		}
		d, err := DeclaredRedis(p, true)
		if err != nil {
			return nil, err
		}
		rt, err := redis.RunLocal(ctx)
		if errors.Is(err, redis.ErrNoServerBinary) {
			return nil, target.Unavailable(ref, errors.New("no "+redis.ServerBinary+" on PATH: a certification target changes server settings, so it runs on a server of the kit's own (install redis-server)"))
		}
		if err != nil {
			return nil, target.Unavailable(ref, err)
		}
		if err := seedRedis(ctx, rt.URL, d.Streams[0], drift); err != nil {
			_ = rt.Stop()
			return nil, target.Unavailable(ref, fmt.Errorf("setting up the certified stream key: %w", err))
		}
		t := RedisBrokerTarget(rt)
		t.Seed = ref.Opts.Seed
		t.Declared = d
		url := rt.URL
		t.Inspect = func(ctx context.Context) (mq.Inspector, error) { return redis.Inspect(ctx, url, nil) }
		t.Budget = DefaultMaxWait
		t.NotApplicable = onlyCertify("redis")
		info := target.Info{
			Name: ref.Key(), Suite: ref.Suite, Mode: target.Embedded, Address: target.Redact(rt.Address),
			Version: rt.Version, Server: rt.Server, Notes: rt.Notes,
			Config: map[string]string{"profile": d.Source},
		}
		for k, v := range d.Server {
			info.Config["declared "+k] = v
		}
		return &target.Started{
			Info:     info,
			Rules:    func() target.RuleSet { return spec.Collect(broker.Register, t.Target, t.Hooks()) },
			Register: func() { broker.Register(t.Target, t.Hooks()) },
			Broker:   t.Open,
			Stop:     rt.Stop,
		}, nil
	}
}

// seedRedis creates s's stream key with three entries and each declared
// group at 0, whose declared consumers read one entry (the group's read
// counter says 1 of 3), then applies drift.
func seedRedis(ctx context.Context, url string, s kithooks.DeclaredStream, drift redismutants.Drift) error {
	o, err := goredis.ParseURL(url)
	if err != nil {
		return err
	}
	rdb := goredis.NewClient(o)
	defer rdb.Close()
	key := s.Topic.Name
	for i := range 3 {
		if err := rdb.XAdd(ctx, &goredis.XAddArgs{Stream: key, Values: []any{"n", i}}).Err(); err != nil {
			return err
		}
	}
	group := ""
	for _, c := range s.Consumers {
		group = c.Config.Group
		if err := rdb.XGroupCreate(ctx, key, group, "0").Err(); err != nil {
			return err
		}
		member := "w1"
		if v := c.Settings["consumers"]; v != "" {
			member = strings.Split(v, ", ")[0]
		}
		if err := rdb.XReadGroup(ctx, &goredis.XReadGroupArgs{Group: group, Consumer: member, Streams: []string{key, ">"}, Count: 1, Block: -1}).Err(); err != nil {
			return err
		}
	}
	if drift != nil {
		return drift(ctx, rdb, key, group)
	}
	return nil
}
