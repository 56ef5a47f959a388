package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/onceproof/tck/adapters/broker/kafka"
	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/adapters/broker/redis"
	"github.com/onceproof/tck/internal/coservice"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/suites/consumer"
)

// IsService says whether a consumer kind is a service run as its own
// process (consumer/process, consumer/process-python, the mutant services).
func IsService(k target.Kind) bool {
	return k.Suite == "consumer" && (k.Name == "process" || strings.HasPrefix(k.Name, "process-") || strings.HasPrefix(k.Name, "mutant-process-"))
}

// ServiceBrokerSupported says whether a consumer service can be run over
// the broker kind key (tck run --broker): the kit's proxy speaks NATS and
// RESP. Any other broker is a usage error (exit 3) the CLI words.
func ServiceBrokerSupported(key string) error {
	switch key {
	case "broker/nats", "broker/redis", "broker/kafka", "broker/kafka-share":
		return nil
	}
	return fmt.Errorf("--broker %s: a consumer service (consumer/process) takes broker/nats, broker/redis, broker/kafka or broker/kafka-share", key)
}

// ServiceBrokerRefSupported is ServiceBrokerSupported and, for a share
// group, its mode (the kit sets the lock and the delivery limit on its own
// kfake only) and the service: the kit's Python services speak no share
// group.
func ServiceBrokerRefSupported(k target.Kind, b target.Ref) error {
	if err := ServiceBrokerSupported(b.Key()); err != nil {
		return err
	}
	if b.Key() != "broker/kafka-share" {
		return nil
	}
	if b.Mode() != target.Embedded {
		return errShareMode(b)
	}
	if strings.Contains(k.Name, "python") {
		return fmt.Errorf("--broker %s: %s/%s, the kit's Python service, speaks no share group; run the Go reference over it (consumer/process=cmd:go run ./examples/consumer-service/go) or its Go mutants", b.Key(), k.Suite, k.Name)
	}
	return nil
}

func errShareMode(b target.Ref) error {
	return fmt.Errorf("--broker %s: a consumer service over a share group takes the embedded kfake (broker/kafka-share), whose lock and delivery limit the kit sets; not a cluster at an address or a container yet", b.Key())
}

// serviceShare is the share-group settings of the kit's kfake for a
// consumer service: the suite's default ack wait (2 s real) is the lock,
// its max deliver (20) the delivery limit (past Kafka's bound of 10, as
// the in-process suite's kfake runs).
var serviceShare = kafka.Share{LockDuration: 2 * time.Second, DeliveryLimit: 20}

// serviceBroker starts or reaches the broker a service's run names
// (ref.Opts.Broker): broker/redis (a URL, TCK_REDIS_URL, a redis-server
// from PATH, or =container) or broker/nats (=URL or =container; the
// embedded mode keeps one embedded server per rule). The zero
// ServiceBroker is the per-rule embedded NATS server.
func serviceBroker(ctx context.Context, ref target.Ref) (consumer.ServiceBroker, string, func() error, error) {
	none := func() error { return nil }
	embedded := "NATS JetStream (an embedded server per rule), a durable pull consumer per rule, reached through the kit's proxy"
	if ref.Opts.Broker == "" {
		return consumer.ServiceBroker{}, embedded, none, nil
	}
	bref, err := ConsumerBroker(Targets(), ref.Opts.Broker)
	if err != nil {
		return consumer.ServiceBroker{}, "", nil, err
	}
	if err := ServiceBrokerSupported(bref.Key()); err != nil {
		return consumer.ServiceBroker{}, "", nil, err
	}
	// The run's material reaches a TLS broker: the kit's client and its
	// proxies speak TLS to it, plain text to the service (coservice/tls.go).
	bref.Opts.TLS = ref.Opts.TLS
	tlsCfg, err := ref.Opts.TLS.Config()
	if err != nil {
		return consumer.ServiceBroker{}, "", nil, err
	}
	switch bref.Key() {
	case "broker/kafka-share":
		if bref.Mode() != target.Embedded {
			// The lock and the delivery limit are the cluster's: the kit
			// sets them on its own kfake only.
			return consumer.ServiceBroker{}, "", nil, errShareMode(bref)
		}
		s := serviceShare
		e, err := kafka.StartEmbeddedShare(ctx, s)
		if err != nil {
			return consumer.ServiceBroker{}, "", nil, fmt.Errorf("its broker %s: %w", bref, err)
		}
		name := "Kafka emulator (kfake, embedded; a pass certifies the service's client-side contract, not a Kafka deployment) " + kafka.KfakeVersion + ", share groups"
		return consumer.ServiceBroker{Kind: coservice.BrokerKafkaShare, URL: strings.Join(e.Seeds(), ","), Name: name, Lock: s.LockDuration, DeliveryLimit: s.DeliveryLimit},
			fmt.Sprintf("%s: a one-partition topic and a share group per rule (share.auto.offset.reset=earliest; removed at its end), reached through the kit's Kafka proxy; group.share.record.lock.duration.ms %s (the ack wait), group.share.delivery.count.limit %d (the max deliver)", name, s.LockDuration, s.DeliveryLimit), e.Stop, nil
	case "broker/kafka":
		var seeds []string
		name := ""
		stop := none
		if bref.Mode() == target.Container {
			return consumer.ServiceBroker{}, "", nil, errors.New("--broker broker/kafka=container: a consumer service takes the embedded kfake (broker/kafka) or a cluster at an address (broker/kafka=kafka://HOST:PORT)")
		}
		if bref.Mode() == target.Embedded {
			e, err := kafka.StartEmbedded(ctx)
			if err != nil {
				return consumer.ServiceBroker{}, "", nil, fmt.Errorf("its broker %s: %w", bref, err)
			}
			seeds, stop = e.Seeds(), e.Stop
			name = "Kafka emulator (kfake, embedded; a pass certifies the service's client-side contract, not a Kafka deployment) " + kafka.KfakeVersion
		} else {
			addr := bref.Address
			if !strings.Contains(addr, "://") {
				addr = "kafka://" + addr
			}
			o, err := kafka.ParseURL(addr)
			if err != nil {
				return consumer.ServiceBroker{}, "", nil, err
			}
			if o.User != "" {
				return consumer.ServiceBroker{}, "", nil, errors.New("--broker broker/kafka=URL: the kit's proxy reads the service's traffic in the clear, so it takes a cluster without SASL")
			}
			seeds, name = o.Seeds, "Kafka at "+strings.Join(o.Seeds, ",")
		}
		return consumer.ServiceBroker{Kind: coservice.BrokerKafka, URL: strings.Join(seeds, ","), Name: name},
			name + ": a one-partition topic per rule and its group's offsets (removed at its end), reached through the kit's Kafka proxy; one replica (one partition)", stop, nil
	case "broker/redis":
		var rt *redis.Target
		if bref.Mode() == target.Container {
			rt, err = redis.Run(ctx, "")
		} else {
			rt, err = redisAt(redis.Client{})(ctx, bref)
		}
		if errors.Is(err, redis.ErrNoServerBinary) {
			return consumer.ServiceBroker{}, "", nil, errors.New("no Redis server: " + RedisURLEnv + " is unset and " + redis.ServerBinary + " is not on PATH; name one (--broker broker/redis=redis://...)")
		}
		if err != nil {
			return consumer.ServiceBroker{}, "", nil, fmt.Errorf("its broker %s: %w", bref, err)
		}
		name := "Redis " + rt.Version + " at " + target.Redact(rt.Name())
		return consumer.ServiceBroker{Kind: coservice.BrokerRedis, URL: rt.URL, Name: name, TLS: rt.Client.Options.TLS},
			name + ": a stream key and consumer group per rule (removed at its end), reached through the kit's RESP proxy", rt.Stop, nil
	default: // broker/nats
		var nt *nats.Target
		switch bref.Mode() {
		case target.Embedded:
			return consumer.ServiceBroker{}, embedded, none, nil
		case target.Container:
			nt, err = nats.Run(ctx, "")
		default:
			nt, err = nats.Open(ctx, bref.Address, nats.WithTLS(tlsCfg))
		}
		if err != nil {
			return consumer.ServiceBroker{}, "", nil, fmt.Errorf("its broker %s: %w", bref, err)
		}
		name := "NATS JetStream at " + target.Redact(nt.Name())
		return consumer.ServiceBroker{Kind: coservice.BrokerNATS, URL: nt.URL, Name: name, TLS: nt.Client.Options.TLS},
			name + ": a stream and durable pull consumer per rule (removed at its end), reached through the kit's proxy", nt.Stop, nil
	}
}
