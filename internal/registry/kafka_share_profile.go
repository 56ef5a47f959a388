package registry

import (
	"context"
	"fmt"
	"strings"

	"github.com/onceproof/tck/adapters/broker/kafka"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/mq"
)

// shareDeclared is what a profile declares of share groups on its one
// Kafka broker: each share group's effective settings by group name.
func shareDeclared(p *profile.Profile) (map[string]profile.ShareSettings, *profile.Broker) {
	out := map[string]profile.ShareSettings{}
	for i := range p.Brokers {
		b := &p.Brokers[i]
		if b.Kind != profile.KindKafka {
			continue
		}
		for j := range b.Streams {
			s := &b.Streams[j]
			for k := range s.Consumers {
				if c := &s.Consumers[k]; c.KafkaShare != nil {
					out[c.Name] = profile.Share(b, s, c, fmt.Sprintf("brokers[%d].streams[%d].consumers[%d]", i, j, k))
				}
			}
		}
		return out, b
	}
	return out, nil
}

// profileShare is the lock and limit the first declared share group runs
// with, for what the address does not say; ok false when the profile
// declares no share group.
func profileShare(p *profile.Profile, s kafka.Share) (kafka.Share, bool) {
	groups, _ := shareDeclared(p)
	first := ""
	for name := range groups {
		if first == "" || name < first {
			first = name
		}
	}
	if first == "" {
		return s, false
	}
	g := groups[first]
	if s.LockDuration <= 0 {
		s.LockDuration = g.Lock
	}
	if s.DeliveryLimit <= 0 {
		s.DeliveryLimit = g.Limit
	}
	return s, true
}

// bindKafkaShareProfile applies the run's profile to a share-group target
// reached by address: BR-6.1 reads what broker/kafka's does (the declared
// topics and the broker configs) and, for each declared share group, the
// group (DescribeShareGroups) and its group configs (DescribeConfigs of
// the group: share.record.lock.duration.ms, share.delivery.count.limit,
// errors.deadletterqueue.topic.name; "" where the group follows the
// cluster), and the cluster's group.share.record.lock.duration.ms and
// group.share.delivery.count.limit (Kafka's 30000 and 5 where the profile
// leaves them out). The kit's own kfake holds none of the team's groups: a
// note and BR-6.1's reason say so.
func bindKafkaShareProfile(kt *kafka.Target, ref target.Ref, t *BrokerBinding, info *target.Info) error {
	p := ref.Opts.Profile
	if p == nil {
		return nil
	}
	onServer := ref.Mode() == target.External
	d, err := DeclaredKafka(p, onServer)
	if err != nil || d == nil {
		return err
	}
	if !onServer {
		info.Notes = append(info.Notes, "the cluster is the kit's own kfake, not the team's: the declared topics and share groups are not on it, so BR-6.1 does not read them; certify the team's cluster with --target broker/kafka-share=kafka://HOST:PORT")
		lacks := map[string]string{}
		for k, v := range t.Lacks {
			lacks[k] = v
		}
		lacks["inspect"] = "certification (BR-6.1) reads a team's own Kafka cluster read-only (the declared topics, share groups and their group configs, the group.share.* broker configs): the cluster is the kit's own kfake, started for this run, and holds none of them; name the team's cluster with tck run --profile FILE --target broker/kafka-share=kafka://HOST:PORT"
		t.Lacks = lacks
		return nil
	}
	groups, b := shareDeclared(p)
	if len(groups) > 0 {
		c := b.KafkaShare
		if c == nil {
			c = &profile.KafkaShareBroker{}
		}
		lock, limit := profile.KafkaShareDefaultLock, profile.KafkaShareDefaultLimit
		if c.RecordLockDuration > 0 {
			lock = c.RecordLockDuration.D()
		}
		if c.DeliveryCountLimit > 0 {
			limit = c.DeliveryCountLimit
		}
		d.Server["group.share.record.lock.duration.ms"] = ms(lock)
		d.Server["group.share.delivery.count.limit"] = fmt.Sprint(limit)
	}
	for i := range d.Streams {
		for j := range d.Streams[i].Consumers {
			c := &d.Streams[i].Consumers[j]
			g, ok := groups[c.Config.Group]
			if !ok {
				continue
			}
			// The timed rules run at the group's lock and limit.
			c.Config.AckWait, c.Config.MaxDeliver = g.Lock, g.Limit
			c.Settings = shareGroupSettings(p, d.Streams[i].Topic.Name, c.Config.Group)
		}
	}
	t.Declared = d
	opts := kt.Client.Options
	t.Inspect = func(ctx context.Context) (mq.Inspector, error) {
		in, err := kafka.Inspect(ctx, opts)
		if err != nil {
			return nil, err
		}
		return &shareInspector{Inspector: in, groups: groups}, nil
	}
	t.Progress = ref.Opts.Progress
	t.Budget = DefaultMaxWait
	if ref.Opts.MaxWait > 0 {
		t.Budget = ref.Opts.MaxWait
	}
	for _, s := range d.Streams {
		info.Config["declared topic "+s.Topic.Name] = strings.TrimPrefix(settingsText(s.Topic.Settings), ", ")
		for _, c := range s.Consumers {
			if c.Settings != nil {
				info.Config["declared share group "+c.Config.Group] = strings.TrimPrefix(settingsText(c.Settings), ", ")
			}
		}
	}
	for k, v := range d.Server {
		info.Config["declared "+k] = v
	}
	info.Config["profile"] = d.Source
	return nil
}

// shareGroupSettings are a share group's declared group configs by Kafka's
// names; "" where the profile leaves one out: the group follows the
// cluster (a group config set on the cluster but not declared differs).
func shareGroupSettings(p *profile.Profile, topic, group string) map[string]string {
	_, b := shareDeclared(p)
	for _, s := range b.Streams {
		if s.Name != topic {
			continue
		}
		for _, c := range s.Consumers {
			if c.Name != group || c.KafkaShare == nil {
				continue
			}
			g := c.KafkaShare
			out := map[string]string{"share.record.lock.duration.ms": "", "share.delivery.count.limit": "", "errors.deadletterqueue.topic.name": g.DeadLetterTopic}
			if g.RecordLockDuration > 0 {
				out["share.record.lock.duration.ms"] = ms(g.RecordLockDuration.D())
			}
			if g.DeliveryCountLimit > 0 {
				out["share.delivery.count.limit"] = fmt.Sprint(g.DeliveryCountLimit)
			}
			return out
		}
	}
	return nil
}

// shareInspector reads a declared share group as a share group
// (DescribeShareGroups and its group configs) and the cluster's
// group.share.* with the other broker configs.
type shareInspector struct {
	*kafka.Inspector
	groups map[string]profile.ShareSettings
}

func (in *shareInspector) Consumer(ctx context.Context, topic, name string) (mq.ConsumerInfo, error) {
	if _, ok := in.groups[name]; ok {
		return in.ShareGroup(ctx, name)
	}
	return in.Inspector.Consumer(ctx, topic, name)
}

func (in *shareInspector) Server(ctx context.Context) (mq.ServerInfo, error) {
	si, err := in.Inspector.Server(ctx)
	if err != nil || len(in.groups) == 0 {
		return si, err
	}
	share, err := in.ShareServer(ctx)
	if err != nil {
		return si, err
	}
	for k, v := range share {
		si.Settings[k] = v
	}
	return si, nil
}
