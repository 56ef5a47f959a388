package registry

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/onceproof/tck/adapters/broker/kafka"
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/kithooks"
	kafkamutants "github.com/onceproof/tck/internal/mutants/kafkamutants"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/broker"
)

const kafkaNeeds = "nothing (embedded kfake, an emulator); a Kafka cluster at kafka://[user:password@]host:port[?bootstrap=host:port,...] for a URL; a local image named by " + kafka.ImageEnv + " for =container"

func kafkaBrokers() []row {
	rows := []row{{
		Kind: target.Kind{
			Suite: "broker", Name: "kafka",
			Summary: "Apache Kafka through franz-go (kgo, kadm): embedded kfake (an emulator), a cluster at kafka://host:port, or a container from the local image in TCK_KAFKA_IMAGE; the idempotent producer, consumer groups with explicit offset commits; no ack wait, nak, term or max-deliver",
			Needs:   kafkaNeeds,
			// The self-test holds the Kafka adapter to passing every rule
			// that applies, as its mutants are measured against it.
			Reference: true,
		},
		modes: []mode{
			{target.Embedded, kafkaBroker(func(ctx context.Context, _ target.Ref) (*kafka.Target, error) {
				return kafka.RunEmbedded(ctx)
			})},
			{target.External, kafkaBroker(func(ctx context.Context, ref target.Ref) (*kafka.Target, error) {
				cfg, err := ref.Opts.TLS.Config()
				if err != nil {
					return nil, err
				}
				return kafka.Open(ctx, ref.Address, kafka.WithTLS(cfg))
			})},
			{target.Container, kafkaBroker(func(ctx context.Context, _ target.Ref) (*kafka.Target, error) {
				return kafka.Run(ctx, "")
			})},
		},
	}}
	// Every broken Kafka client, each in front of an embedded kfake.
	for _, m := range kafkamutants.All() {
		rows = append(rows, row{
			Kind: target.Kind{
				Suite: "broker", Name: "mutant-kafka-" + m.Name,
				Summary: "mutant: " + m.Defect,
				Needs:   "nothing",
				Mutant:  true, MustFail: m.MustFail,
			},
			modes: []mode{{target.Embedded, kafkaBroker(func(ctx context.Context, _ target.Ref) (*kafka.Target, error) {
				return kafka.RunEmbedded(ctx, kafka.WithClient(m.Build))
			})}},
			note: "mutant: " + m.Defect,
		})
	}
	return rows
}

// kafkaBroker binds a Kafka target, however started, to the broker suite.
func kafkaBroker(startKafka func(ctx context.Context, ref target.Ref) (*kafka.Target, error)) start {
	return brokerStart(func(ctx context.Context, ref target.Ref) (*boundBroker, error) {
		kt, err := startKafka(ctx, ref)
		if err != nil {
			return nil, err
		}
		t := KafkaBrokerTarget(kt)
		cfg := map[string]string{"redeliveryBound": t.Windows.AckWait.String() + " (a bound on a rebalance, not an ack wait)",
			"totalQueueMessages": fmt.Sprint(kithooks.DefaultWindows().Messages), "retentions": "limits"}
		maps.Copy(cfg, kt.Config)
		return &boundBroker{info: &kt.Info, stop: kt.Stop, binding: t, config: cfg,
			// The run's profile (kafka_profile.go).
			profile: func(_ context.Context, ref target.Ref, t *BrokerBinding, info *target.Info) error {
				return bindKafkaProfile(kt, ref, t, info)
			}}, nil
	})
}

// kafkaRedeliveryBound is the generic delivery rules' ack wait on Kafka:
// Kafka has none, so it only bounds how long a rule waits for a record
// that must come (after a group join or a rebalance).
const kafkaRedeliveryBound = 5 * time.Second

// kafkaLacks says, per capability Kafka lacks, why, in Kafka's own terms.
var kafkaLacks = map[string]string{
	string(catalog.CapBrokerDedupe):     "Kafka's idempotent producer de-dupes retries within one producer session only; there is no id-based window",
	string(catalog.CapBrokerAckWait):    "Kafka has no ack wait: an uncommitted record comes back only by a rebalance (its member left the group) or a seek or reset of the group's offset, never by a timer",
	string(catalog.CapBrokerNakDelay):   "Kafka has no per-message nak: a member commits an offset, which covers every earlier record, or seeks; redelivery is a rebalance or a seek",
	string(catalog.CapBrokerTerm):       "Kafka has no term: a record is never retired on its own, only passed by a commit of a later offset",
	string(catalog.CapBrokerMaxDeliver): "Kafka keeps no delivery counter and no delivery limit: a record that always fails is the application's to park (a dead-letter topic)",
	string(catalog.CapBrokerInProgress): "Kafka has no per-record deadline to push back: a member's liveness is its group session (heartbeats), not a per-message timer",
	string(catalog.CapBrokerRestart):    "the kit cannot restart a Kafka cluster it did not start (broker/kafka=container or the embedded kfake can)",
	string(catalog.CapBrokerFaultProxy): "the kit's fault proxy cannot stand before a Kafka cluster: clients follow the brokers' advertised addresses from metadata",
}

// KafkaBrokerTarget is the broker suite's view of a Kafka target, however
// it was started.
func KafkaBrokerTarget(kt *kafka.Target) BrokerBinding {
	client := kt.Client
	t := BrokerBinding{
		Target: broker.Target{Open: client.Open, Caps: kt.Caps},
		Broker: kithooks.Broker{Windows: kithooks.Windows{AckWait: kafkaRedeliveryBound}},
	}
	t.Private = privateOf(kt.Private)
	e := kt.Embedded
	t.LoseProduceReply = func(ctx context.Context, topic string) (mq.Producer, kithooks.LostReply, error) {
		if e == nil {
			// Any cluster: the reply is swallowed in the kit's own client.
			d, err := kafka.DropNextProduceReply(ctx, client.Options)
			if err != nil {
				return nil, nil, err
			}
			return d, d, nil
		}
		// kfake: its request controls lose the reply at the broker.
		b, err := client.Open(ctx)
		if err != nil {
			return nil, nil, err
		}
		sb, ok := b.(mq.SessionBroker)
		if !ok {
			_ = b.Close()
			return nil, nil, fmt.Errorf("the handle (%T) starts no producer session", b)
		}
		p, err := sb.Producer(ctx)
		if err != nil {
			_ = b.Close()
			return nil, nil, err
		}
		return sessionOn{p, b}, lostReply{e.LoseNextProduceReply(client.Options.TopicName(topic))}, nil
	}
	// Kafka's reasons for what it lacks; a rule that needs one is
	// not-applicable with it only if the target does lack it (a mutant may
	// declare what Kafka lacks: then the rule runs).
	t.Lacks = kafkaLacks
	return t
}

// lostReply is kfake's lost-reply fault as the suite sees it.
type lostReply struct{ l *kafka.LostReply }

func (l lostReply) Fired() bool { return l.l.Fired() }
func (l lostReply) Remove()     { l.l.Remove() }
func (l lostReply) Seen() []string {
	var out []string
	for _, a := range l.l.Seen() {
		out = append(out, a.String())
	}
	return out
}

// sessionOn is a producer session that closes its handle with it.
type sessionOn struct {
	mq.Producer
	b mq.Broker
}

func (s sessionOn) Close() error {
	_ = s.Producer.Close()
	return s.b.Close()
}
