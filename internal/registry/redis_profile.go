package registry

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/onceproof/tck/adapters/broker/redis"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/mq"
)

// DeclaredRedis is what a profile declares for a Redis target: the stream
// keys and groups of its one Redis broker and the server settings it
// relies on, each left out filled with Redis's default so that it is
// compared too. A profile with no Redis stream gives nil (nothing to
// certify: the run uses the kit's settings); one with several Redis
// brokers is refused.
func DeclaredRedis(p *profile.Profile, onServer bool) (*kithooks.Declared, error) {
	var rb []profile.Broker
	for _, b := range p.Brokers {
		if b.Kind == profile.KindRedis {
			rb = append(rb, b)
		}
	}
	switch {
	case len(rb) == 0 || len(rb[0].Streams) == 0:
		return nil, nil
	case len(rb) > 1:
		return nil, fmt.Errorf("profile %s declares %d Redis brokers; a run certifies one server: keep one Redis broker in the profile", p.File(), len(rb))
	}
	b := rb[0]
	srv := b.Redis
	if srv == nil {
		srv = &profile.RedisServer{}
	}
	ao := "no"
	if srv.AppendOnly {
		ao = "yes"
	}
	d := &kithooks.Declared{
		Source: fmt.Sprintf("%s (profile %s, broker %s)", p.File(), p.Name, b.Name), OnServer: onServer,
		Server: map[string]string{
			"appendonly":       ao,
			"appendfsync":      orS(string(srv.AppendFsync), string(profile.RedisDefaultFsync)),
			"maxmemory-policy": orS(srv.MaxmemoryPolicy, profile.RedisDefaultMaxmemory),
			"role":             "master",
			"connected_slaves": fmt.Sprint(srv.Replicas),
		},
	}
	for _, pr := range p.Producers {
		if pr.Broker == b.Name {
			d.Producers = append(d.Producers, kithooks.DeclaredProducer{Name: pr.Name, Stream: pr.Stream, KeepsID: pr.KeepsMessageID})
		}
	}
	kit := kithooks.DefaultWindows()
	for _, s := range b.Streams {
		var groups []string
		for _, c := range s.Consumers {
			groups = append(groups, c.Name)
		}
		sort.Strings(groups)
		ds := kithooks.DeclaredStream{ClientSide: true, Topic: mq.TopicInfo{Name: s.Name, Settings: map[string]string{
			"type": "stream", "groups": strings.Join(groups, ", "), "ttl": "none",
		}}}
		if s.Redis != nil && s.Redis.Trim != "" {
			d.SetupHazards = append(d.SetupHazards, fmt.Sprintf("stream key %s: the trim policy (%s) is the producers' XADD argument, not a server setting: it is analysed statically (tck plan --profile), and the server's pending list is checked for entries it already cut", s.Name, s.Redis.Trim))
		}
		for _, c := range s.Consumers {
			ci := mq.ConsumerInfo{Config: mq.ConsumerConfig{Group: c.Name, AckWait: kit.AckWait, MaxDeliver: c.MaxDeliver}, Settings: map[string]string{}}
			if c.Redis != nil {
				if c.Redis.ClaimMinIdle > 0 {
					ci.Config.AckWait = c.Redis.ClaimMinIdle.D()
				}
				if len(c.Redis.Consumers) > 0 {
					names := append([]string(nil), c.Redis.Consumers...)
					sort.Strings(names)
					ci.Settings["consumers"] = strings.Join(names, ", ")
				}
			}
			if ci.Config.MaxDeliver < 0 {
				ci.Config.MaxDeliver = 0
			}
			ds.Consumers = append(ds.Consumers, ci)
		}
		d.Streams = append(d.Streams, ds)
	}
	return d, nil
}

// bindRedisProfile applies the run's profile to a Redis target reached by
// URL: BR-6.1 reads the declared stream keys, groups and server settings
// (read only, redis.Inspect) and the timed rules run on scratch keys at
// the declared claim time. On a server of the kit's own the declared keys
// are not there: a note says so and nothing is bound.
func bindRedisProfile(rt *redis.Target, ref target.Ref, t *BrokerBinding, info *target.Info) error {
	p := ref.Opts.Profile
	if p == nil {
		return nil
	}
	onServer := ref.Mode() == target.External && ref.Address != ""
	d, err := DeclaredRedis(p, onServer)
	if err != nil || d == nil {
		return err
	}
	if !onServer {
		info.Notes = append(info.Notes, "the server is the kit's own, not the team's: the declared Redis stream keys are not on it, so BR-6.1 does not read them; certify the team's server with --target broker/redis=redis://HOST:PORT")
		// BR-6.1's reason says so in plain words, as Kafka's does.
		lacks := map[string]string{}
		for k, v := range t.Lacks {
			lacks[k] = v
		}
		lacks["inspect"] = "certification (BR-6.1) reads a team's own Redis read-only (the declared stream keys, their groups and the persistence settings): the server is the kit's own, started for this run, and holds none of them; name the team's server with tck run --profile FILE --target broker/redis=redis://HOST:PORT"
		t.Lacks = lacks
		return nil
	}
	t.Declared = d
	url, tlsCfg := rt.URL, rt.Client.Options.TLS
	t.Inspect = func(ctx context.Context) (mq.Inspector, error) { return redis.Inspect(ctx, url, tlsCfg) }
	t.Progress = ref.Opts.Progress
	t.Budget = DefaultMaxWait
	if ref.Opts.MaxWait > 0 {
		t.Budget = ref.Opts.MaxWait
	}
	for _, s := range d.Streams {
		var gs []string
		for _, c := range s.Consumers {
			gs = append(gs, fmt.Sprintf("%s (claim min-idle %s)", c.Config.Group, c.Config.AckWait))
		}
		info.Config["declared stream key "+s.Topic.Name] = "groups " + orS(strings.Join(gs, ", "), "(none)")
	}
	for k, v := range d.Server {
		info.Config["declared "+k] = v
	}
	info.Config["profile"] = d.Source
	return nil
}
