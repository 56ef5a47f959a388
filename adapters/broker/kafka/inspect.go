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
	FetchOffsets(ctx context.Context, group string) (kadm.OffsetResponses, error)
	ListStartOffsets(ctx context.Context, topics ...string) (kadm.ListedOffsets, error)
	ListEndOffsets(ctx context.Context, topics ...string) (kadm.ListedOffsets, error)
	ApiVersions(ctx context.Context) (kadm.BrokersApiVersions, error)
	ListBrokers(ctx context.Context) (kadm.BrokerDetails, error)
}

// Inspector reads a team's topics, groups and broker configuration with
// read-only admin requests (Metadata, DescribeConfigs, DescribeGroups,
// OffsetFetch, ListOffsets): it
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

// Consumer reads group name: its state and members (DescribeGroups), and
// its committed offsets on topic against the partitions' log start and end
// (OffsetFetch, ListOffsets). A group the cluster does not know is not
// found (Kafka answers Dead).
//
// Settings "committed-before-log-start" and "committed-past-log-end" name
// the partitions whose committed offset no consumption can explain: below
// the log start, records were deleted before the group read them; past the
// log end, the offset was set by hand beyond any record (records produced
// up to it are never consumed by the group). A commit moved forward inside
// the log cannot be told from consumption: Kafka keeps no record of what a
// group read, only where it is. "committed-without-epoch" names the
// partitions whose offset inside the log, past its start, was committed
// without a leader epoch: a consumer commits the epoch of the record it
// fetched (KIP-320), a reset by hand (kafka-consumer-groups
// --reset-offsets, an admin client) or an old client does not.
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
	s := map[string]string{"state": g.State, "protocol": g.Protocol, "members": strings.Join(members, ", ")}
	if err := in.offsets(ctx, topic, name, s); err != nil {
		return mq.ConsumerInfo{}, err
	}
	return mq.ConsumerInfo{Config: mq.ConsumerConfig{Group: name}, Settings: s}, nil
}

// offsets reads group's committed offsets on topic and the log bounds, and
// writes them into s by partition.
func (in *Inspector) offsets(ctx context.Context, topic, group string, s map[string]string) error {
	committed, err := in.adm.FetchOffsets(ctx, group)
	if err != nil {
		return fmt.Errorf("OffsetFetch of group %s: %w", group, err)
	}
	starts, err := in.adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("ListOffsets (start) of topic %s: %w", topic, err)
	}
	ends, err := in.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("ListOffsets (end) of topic %s: %w", topic, err)
	}
	var parts []int32
	for p := range committed[topic] {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	var all, before, past, noEpoch []string
	var lag int64
	for _, p := range parts {
		c := committed[topic][p]
		if c.Err != nil {
			return fmt.Errorf("OffsetFetch of group %s, %s/%d: %w", group, topic, p, c.Err)
		}
		if c.At < 0 {
			continue // nothing committed on this partition
		}
		st, ok1 := starts.Lookup(topic, p)
		en, ok2 := ends.Lookup(topic, p)
		if !ok1 || !ok2 || st.Err != nil || en.Err != nil {
			return fmt.Errorf("ListOffsets of %s/%d: no answer for the partition", topic, p)
		}
		all = append(all, fmt.Sprintf("p%d %d of [%d, %d)", p, c.At, st.Offset, en.Offset))
		switch {
		case c.At < st.Offset:
			before = append(before, fmt.Sprintf("p%d committed %d < log start %d (offsets %d..%d deleted unread)", p, c.At, st.Offset, c.At, st.Offset-1))
		case c.At > en.Offset:
			past = append(past, fmt.Sprintf("p%d committed %d > log end %d", p, c.At, en.Offset))
		default:
			lag += en.Offset - c.At
			if c.LeaderEpoch < 0 && c.At > st.Offset {
				noEpoch = append(noEpoch, fmt.Sprintf("p%d committed %d (offsets %d..%d before it)", p, c.At, st.Offset, c.At-1))
			}
		}
	}
	s["committed"] = strings.Join(all, ", ")
	s["lag"] = fmt.Sprint(lag)
	if len(before) > 0 {
		s["committed-before-log-start"] = strings.Join(before, ", ")
	}
	if len(past) > 0 {
		s["committed-past-log-end"] = strings.Join(past, ", ")
	}
	if len(noEpoch) > 0 {
		s["committed-without-epoch"] = strings.Join(noEpoch, ", ")
	}
	return nil
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
