package registry

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/onceproof/tck/adapters/broker/kafka"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/mq"
)

// ms is a duration as Kafka writes one in a config: whole milliseconds.
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// DeclaredKafka is what a profile declares for a Kafka target: the topics
// and groups of its one Kafka broker, and the broker configs it relies on,
// by Kafka's names, each left out filled with Kafka's default so that it
// is compared too. A profile with no Kafka topic gives nil; one with
// several Kafka brokers is refused.
func DeclaredKafka(p *profile.Profile, onServer bool) (*kithooks.Declared, error) {
	var kb []profile.Broker
	for _, b := range p.Brokers {
		if b.Kind == profile.KindKafka {
			kb = append(kb, b)
		}
	}
	switch {
	case len(kb) == 0 || len(kb[0].Streams) == 0:
		return nil, nil
	case len(kb) > 1:
		return nil, fmt.Errorf("profile %s declares %d Kafka brokers; a run certifies one cluster: keep one Kafka broker in the profile", p.File(), len(kb))
	}
	b := kb[0]
	kc := b.Kafka
	if kc == nil {
		kc = &profile.KafkaBroker{}
	}
	d := &kithooks.Declared{
		Source: fmt.Sprintf("%s (profile %s, broker %s)", p.File(), p.Name, b.Name), OnServer: onServer,
		Server: map[string]string{
			"producer.id.expiration.ms":      ms(cmp.Or(kc.ProducerIDExpiration.D(), profile.KafkaDefaultPIDExpiration)),
			"transactional.id.expiration.ms": ms(cmp.Or(kc.TransactionalIDExpiration.D(), profile.KafkaDefaultTxnIDExpiration)),
		},
	}
	for _, pr := range p.Producers {
		if pr.Broker != b.Name {
			continue
		}
		h, _ := pr.Kafka.Horizon() // the client's own retries: a re-send is a new record
		d.Producers = append(d.Producers, kithooks.DeclaredProducer{Name: pr.Name, Stream: pr.Stream, KeepsID: pr.KeepsMessageID, RetryHorizon: h})
	}
	for _, s := range b.Streams {
		t := s.Kafka
		if t == nil {
			t = &profile.KafkaTopic{}
		}
		retention := "-1" // maxAge absent: kept without an age limit
		if s.MaxAge > 0 {
			retention = ms(s.MaxAge.D())
		}
		mis, _ := t.MinISR()
		set := map[string]string{
			"retention.ms":                   retention,
			"retention.bytes":                fmt.Sprint(cmp.Or(t.RetentionBytes, profile.KafkaDefaultRetentionBytes)),
			"max.message.bytes":              fmt.Sprint(cmp.Or(t.MaxMessageBytes, profile.KafkaDefaultMaxMessageBytes)),
			"cleanup.policy":                 orS(string(t.CleanupPolicy), string(profile.CleanupDelete)),
			"min.insync.replicas":            fmt.Sprint(mis),
			"unclean.leader.election.enable": strconv.FormatBool(t.UncleanLeaderElection),
		}
		// flush.*: Long.MAX (never) unless declared; a cluster that does
		// not serve them (kfake) leaves a note, not a difference.
		fm, fms := t.Flush()
		set["flush.messages"], set["flush.ms"] = fmt.Sprint(fm), fmt.Sprint(fms)
		if s.Replicas > 0 {
			set["replication.factor"] = fmt.Sprint(s.Replicas)
		}
		if t.Partitions > 0 {
			set["partitions"] = fmt.Sprint(t.Partitions)
		}
		ds := kithooks.DeclaredStream{ClientSide: true, Noun: "topic", Topic: mq.TopicInfo{Name: s.Name, Settings: set,
			Config: mq.TopicConfig{Retention: mq.Limits, MaxAge: s.MaxAge.D(), Replicas: s.Replicas}}}
		for _, c := range s.Consumers {
			ds.Consumers = append(ds.Consumers, mq.ConsumerInfo{Config: mq.ConsumerConfig{Group: c.Name, AckWait: kafkaRedeliveryBound}})
		}
		d.Streams = append(d.Streams, ds)
	}
	return d, nil
}

// bindKafkaProfile applies the run's profile to a Kafka target reached by
// address: BR-6.1 reads the declared topics, groups and broker configs
// (read only, kafka.Inspect). The kit's own cluster does not hold them: a
// note says so and nothing is bound.
func bindKafkaProfile(kt *kafka.Target, ref target.Ref, t *BrokerBinding, info *target.Info) error {
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
		info.Notes = append(info.Notes, "the cluster is the kit's own, not the team's: the declared Kafka topics are not on it, so BR-6.1 does not read them; certify the team's cluster with --target broker/kafka=kafka://HOST:PORT")
		// BR-6.1's reason says so in plain words (issue 38, item 5).
		lacks := map[string]string{}
		for k, v := range t.Lacks {
			lacks[k] = v
		}
		lacks["inspect"] = "certification (BR-6.1) reads a team's own Kafka cluster read-only (the declared topics' configs, groups and broker configs): the cluster is the kit's own, started for this run, and holds none of them; name the team's cluster with tck run --profile FILE --target broker/kafka=kafka://HOST:PORT"
		t.Lacks = lacks
		return nil
	}
	t.Declared = d
	opts := kt.Client.Options
	t.Inspect = func(ctx context.Context) (mq.Inspector, error) { return kafka.Inspect(ctx, opts) }
	t.Progress = ref.Opts.Progress
	t.Budget = DefaultMaxWait
	if ref.Opts.MaxWait > 0 {
		t.Budget = ref.Opts.MaxWait
	}
	for _, s := range d.Streams {
		info.Config["declared topic "+s.Topic.Name] = strings.TrimPrefix(settingsText(s.Topic.Settings), ", ")
	}
	for k, v := range d.Server {
		info.Config["declared "+k] = v
	}
	info.Config["profile"] = d.Source
	info.Notes = append(info.Notes, "kfake, an emulator, serves only some configs through DescribeConfigs: what it does not serve is a note in BR-6.1, not compared")
	return nil
}
