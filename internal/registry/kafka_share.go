package registry

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"strconv"
	"time"

	"github.com/onceproof/tck/adapters/broker/kafka"
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/kithooks"
	kafkamutants "github.com/onceproof/tck/internal/mutants/kafkamutants"
	"github.com/onceproof/tck/internal/redact"
	"github.com/onceproof/tck/internal/target"
)

const kafkaShareNeeds = "nothing (embedded kfake with share groups, an emulator); a Kafka 4.1+ cluster with share groups enabled at kafka://[user:password@]host:port[?lock=30s&deliveries=5] (lock and deliveries: the group.share.record.lock.duration.ms and group.share.delivery.count.limit the team's groups run with; Kafka's defaults when absent)"

// kafkaShareBrokers is broker/kafka-share and its mutants.
func kafkaShareBrokers() []row {
	rows := []row{{
		Kind: target.Kind{
			Suite: "broker", Name: "kafka-share",
			Summary:   "Kafka share groups (KIP-932, queues for Kafka) through franz-go's kgo.ShareGroup: embedded kfake (an emulator, lock 2s, delivery limit 3) or a cluster at kafka://host:port; ACCEPT, RELEASE, REJECT, RENEW as ack, nak, term, in-progress; the acquisition lock as ack wait, the delivery count limit as max-deliver",
			Needs:     kafkaShareNeeds,
			Reference: true,
		},
		modes: []mode{
			{target.Embedded, kafkaShareBroker(func(ctx context.Context, _ target.Ref) (*kafka.Target, error) {
				return kafka.RunEmbedded(ctx, kafka.WithShare(kafka.KitShare))
			})},
			{target.External, kafkaShareBroker(func(ctx context.Context, ref target.Ref) (*kafka.Target, error) {
				s, err := declaredShare(ref.Address)
				if err != nil {
					return nil, err
				}
				if ref.Opts.Profile != nil {
					// What the address leaves out is the profile's.
					s, _ = profileShare(ref.Opts.Profile, s)
				}
				return kafka.Open(ctx, ref.Address, kafka.WithShare(s))
			})},
		},
	}}
	for _, m := range kafkamutants.Share() {
		rows = append(rows, row{
			Kind: target.Kind{
				Suite: "broker", Name: "mutant-kafka-" + m.Name,
				Summary: "mutant: " + m.Defect,
				Needs:   "nothing",
				Mutant:  true, MustFail: m.MustFail,
			},
			modes: []mode{{target.Embedded, kafkaShareBroker(func(ctx context.Context, _ target.Ref) (*kafka.Target, error) {
				return kafka.RunEmbedded(ctx, kafka.WithClient(m.Build), kafka.WithShare(shareOf(m.Build)))
			})}},
			note: "mutant: " + m.Defect,
		})
	}
	return rows
}

// declaredShare reads lock= and deliveries= from a kafka:// address.
func declaredShare(raw string) (kafka.Share, error) {
	var s kafka.Share
	u, err := url.Parse(raw)
	if err != nil {
		return s, fmt.Errorf("address %q: want kafka://host:port[?lock=30s&deliveries=5]", redact.Text(raw))
	}
	q := u.Query()
	if v := q.Get("lock"); v != "" {
		if s.LockDuration, err = time.ParseDuration(v); err != nil || s.LockDuration <= 0 {
			return s, fmt.Errorf("lock=%q: want a positive duration such as 30s (group.share.record.lock.duration.ms)", v)
		}
	}
	if v := q.Get("deliveries"); v != "" {
		if s.DeliveryLimit, err = strconv.Atoi(v); err != nil || s.DeliveryLimit < 2 {
			return s, fmt.Errorf("deliveries=%q: want a whole number of at least 2 (group.share.delivery.count.limit)", v)
		}
	}
	return s, nil
}

// kafkaShareBroker binds a share-group target to the broker suite.
func kafkaShareBroker(startKafka func(ctx context.Context, ref target.Ref) (*kafka.Target, error)) start {
	return brokerStart(func(ctx context.Context, ref target.Ref) (*boundBroker, error) {
		kt, err := startKafka(ctx, ref)
		if err != nil {
			return nil, err
		}
		t := KafkaShareBrokerTarget(kt)
		cfg := map[string]string{"ackWait": t.Windows.AckWait.String() + " (the acquisition lock)", "maxDeliver": fmt.Sprint(t.Windows.MaxDeliver) + " (the delivery count limit)",
			"totalQueueMessages": fmt.Sprint(kithooks.DefaultWindows().Messages), "retentions": "limits"}
		maps.Copy(cfg, kt.Config)
		return &boundBroker{info: &kt.Info, stop: kt.Stop, binding: t, config: cfg,
			profile: func(_ context.Context, ref target.Ref, t *BrokerBinding, info *target.Info) error {
				if err := bindKafkaShareProfile(kt, ref, t, info); err != nil {
					return target.Unavailable(ref, err)
				}
				return nil
			}}, nil
	})
}

// shareOf is the share-group settings a mutant's client asks for, or the
// kit's (KitShare).
func shareOf(c kafka.Client) kafka.Share {
	if c.Options.Share != nil {
		return *c.Options.Share
	}
	return kafka.KitShare
}

// kafkaShareLacks says, per capability a share group lacks, why.
var kafkaShareLacks = map[string]string{
	string(catalog.CapBrokerDedupe):       kafkaLacks[string(catalog.CapBrokerDedupe)],
	string(catalog.CapBrokerNakDelay):     "KIP-932 has no delayed release: a RELEASE makes the record available at once (RENEW extends a lock, it does not delay a redelivery)",
	string(catalog.CapBrokerGroupOffsets): "a share group commits no offset: its progress is the share-partition start offset and per-record state, acknowledged record by record",
	string(catalog.CapBrokerRestart):      "broker/kafka-share starts no cluster of a rule's own to restart (broker/kafka checks BR-3.1 on the same log)",
	string(catalog.CapBrokerFaultProxy):   kafkaLacks[string(catalog.CapBrokerFaultProxy)],
}

// KafkaShareBrokerTarget is the broker suite's view of a share-group
// target: Kafka's, with the lock as the ack wait and the delivery limit as
// max-deliver.
func KafkaShareBrokerTarget(kt *kafka.Target) BrokerBinding {
	t := KafkaBrokerTarget(kt)
	s := kafka.KitShare
	if kt.Client.Options.Share != nil {
		s = *kt.Client.Options.Share
	}
	t.Windows = kithooks.Windows{AckWait: s.LockDuration, MaxDeliver: s.DeliveryLimit, Tolerance: shareTolerance(s.LockDuration)}
	t.Private = nil
	t.Lacks = kafkaShareLacks
	return t
}

// shareTolerance: kfake expires locks at a 50 ms sweep and kgo polls in
// 100 ms steps; a quarter of the lock, at least 500 ms.
func shareTolerance(lock time.Duration) time.Duration { return max(lock/4, 500*time.Millisecond) }
