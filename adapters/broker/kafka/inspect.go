package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/onceproof/tck/mq"
)

// configAdmin is the part of kadm the Inspector reads through: a unit test
// answers it with a fake where kfake serves less than a real cluster.
type configAdmin interface {
	ListTopics(ctx context.Context, topics ...string) (kadm.TopicDetails, error)
	DescribeTopicConfigs(ctx context.Context, topics ...string) (kadm.ResourceConfigs, error)
	DescribeBrokerConfigs(ctx context.Context, brokers ...int32) (kadm.ResourceConfigs, error)
	DescribeGroups(ctx context.Context, groups ...string) (kadm.DescribedGroups, error)
	ApiVersions(ctx context.Context) (kadm.BrokersApiVersions, error)
	ListBrokers(ctx context.Context) (kadm.BrokerDetails, error)
}

// Inspector reads a team's topics, groups and broker configuration with
// read-only admin requests (Metadata, DescribeConfigs, DescribeGroups): it
// creates, alters, commits and deletes nothing. Topics are read by their
// exact name, not under the kit's prefix.
type Inspector struct {
	adm   configAdmin
	cl    *kgo.Client // for the requests kadm has no helper for (inspect_share.go)
	close func()
}

var _ mq.Inspector = (*Inspector)(nil)

// Inspect connects an Inspector to the cluster at opts.Seeds.
func Inspect(ctx context.Context, opts Options) (*Inspector, error) {
	opts = opts.withDefaults()
	base, err := opts.baseOpts()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(base...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("no broker of %s answered: %w", strings.Join(opts.Seeds, ","), err)
	}
	return &Inspector{adm: kadm.NewClient(cl), cl: cl, close: cl.Close}, nil
}

// BrokerSettings are the broker configs the Inspector reads (those a
// producer's de-dupe and the transactions hang on).
var BrokerSettings = []string{"producer.id.expiration.ms", "transactional.id.expiration.ms", "min.insync.replicas", "unclean.leader.election.enable", "default.replication.factor"}

// Topic reads topic name: partitions, replication factor and every config
// DescribeConfigs answers (retention.ms, cleanup.policy,
// min.insync.replicas, ...), by Kafka's names.
func (in *Inspector) Topic(ctx context.Context, name string) (mq.TopicInfo, error) {
	td, err := in.adm.ListTopics(ctx, name)
	if err != nil {
		return mq.TopicInfo{}, fmt.Errorf("metadata of topic %s: %w", name, err)
	}
	d, ok := td[name]
	if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return mq.TopicInfo{}, fmt.Errorf("topic %s: %w", name, mq.ErrNotFound)
	}
	if d.Err != nil {
		return mq.TopicInfo{}, fmt.Errorf("metadata of topic %s: %w", name, d.Err)
	}
	rcs, err := in.adm.DescribeTopicConfigs(ctx, name)
	if err != nil {
		return mq.TopicInfo{}, fmt.Errorf("DescribeConfigs of topic %s: %w", name, err)
	}
	s := map[string]string{"partitions": fmt.Sprint(len(d.Partitions))}
	rf := 0
	for _, p := range d.Partitions {
		rf = max(rf, len(p.Replicas))
	}
	s["replication.factor"] = fmt.Sprint(rf)
	for _, rc := range rcs {
		if rc.Err != nil {
			return mq.TopicInfo{}, fmt.Errorf("DescribeConfigs of topic %s: %w", name, rc.Err)
		}
		for _, c := range rc.Configs {
			s[c.Key] = c.MaybeValue()
		}
	}
	ti := mq.TopicInfo{Name: name, Settings: s, Config: mq.TopicConfig{Replicas: rf, Retention: mq.Limits}}
	if ms, err := strconv.ParseInt(s["retention.ms"], 10, 64); err == nil && ms > 0 {
		ti.Config.MaxAge = time.Duration(ms) * time.Millisecond
	}
	return ti, nil
}

// Consumer reads group name: its state and members (DescribeGroups). A
// group the cluster does not know is not found (Kafka answers Dead).
func (in *Inspector) Consumer(ctx context.Context, topic, name string) (mq.ConsumerInfo, error) {
	dg, err := in.adm.DescribeGroups(ctx, name)
	if err != nil {
		return mq.ConsumerInfo{}, fmt.Errorf("DescribeGroups %s: %w", name, err)
	}
	g, ok := dg[name]
	if !ok || g.State == "Dead" || errors.Is(g.Err, kerr.GroupIDNotFound) {
		return mq.ConsumerInfo{}, fmt.Errorf("group %s: %w", name, mq.ErrNotFound)
	}
	if g.Err != nil {
		return mq.ConsumerInfo{}, fmt.Errorf("DescribeGroups %s: %w", name, g.Err)
	}
	var members []string
	for _, m := range g.Members {
		members = append(members, m.ClientID)
	}
	sort.Strings(members)
	return mq.ConsumerInfo{Config: mq.ConsumerConfig{Group: name}, Settings: map[string]string{
		"state": g.State, "protocol": g.Protocol, "members": strings.Join(members, ", "),
	}}, nil
}

// Server reads the broker configs of BrokerSettings (DescribeConfigs of
// every broker, the first answer's value; brokers that disagree say so).
// A config the cluster does not serve says so: kfake, an emulator, serves
// no producer.id.expiration.ms and no unclean.leader.election.enable.
func (in *Inspector) Server(ctx context.Context) (mq.ServerInfo, error) {
	si := mq.ServerInfo{Version: "kafka (version not announced by the protocol)", Settings: map[string]string{}}
	if v, err := in.adm.ApiVersions(ctx); err == nil {
		v.Each(func(b kadm.BrokerApiVersions) {
			if guess := b.VersionGuess(); guess != "" {
				si.Version = "kafka " + guess + " (guessed from its API versions)"
			}
		})
	}
	bs, err := in.adm.ListBrokers(ctx)
	if err != nil {
		return si, fmt.Errorf("the cluster's brokers: %w", err)
	}
	rcs, err := in.adm.DescribeBrokerConfigs(ctx, bs.NodeIDs()...)
	if err != nil {
		return si, fmt.Errorf("DescribeConfigs of the brokers: %w", err)
	}
	seen := map[string]map[string]bool{}
	for _, rc := range rcs {
		if rc.Err != nil {
			return si, fmt.Errorf("DescribeConfigs of broker %s: %w", rc.Name, rc.Err)
		}
		for _, c := range rc.Configs {
			if seen[c.Key] == nil {
				seen[c.Key] = map[string]bool{}
			}
			seen[c.Key][c.MaybeValue()] = true
		}
	}
	for _, k := range BrokerSettings {
		vals := seen[k]
		switch len(vals) {
		case 0:
			si.Settings[k] = "not served by this cluster's DescribeConfigs"
		case 1:
			for v := range vals {
				si.Settings[k] = v
			}
		default:
			var vs []string
			for v := range vals {
				vs = append(vs, v)
			}
			sort.Strings(vs)
			si.Settings[k] = "brokers differ: " + strings.Join(vs, " / ")
		}
	}
	return si, nil
}

// Close closes the Inspector's client.
func (in *Inspector) Close() error {
	if in.close != nil {
		in.close()
	}
	return nil
}
