package coservice

import (
	"context"

	"github.com/onceproof/tck/mq"
)

// DurableName is the name of the durable consumer the kit creates in each
// rule's stream.
const DurableName = "onceproof-service"

// Channel is one rule's stream (a NATS stream and durable consumer, a
// Redis stream key and consumer group) and the replicas' proxies in front
// of its broker.
type Channel interface {
	// Env is the broker's variables for one replica (each its own proxy
	// address, so the kit tells replicas apart on the wire).
	Env(worker string) (map[string]string, error)
	// Watch installs the hook that sees the service's broker traffic.
	Watch(h Hook)
	// Publish sends m (its id and headers as the broker carries them) and
	// returns its sequence (Event.Seq of its deliveries and acks) and
	// whether the broker took it as a duplicate.
	Publish(ctx context.Context, m mq.Message) (seq uint64, dup bool, err error)
	// Outstanding is what the broker still holds for the consumer: not yet
	// delivered plus delivered and not acked.
	Outstanding(ctx context.Context) (int, error)
	// Close stops the proxies and removes the stream from the broker.
	Close() error
}

// The values of EnvBroker, EnvKafkaBrokers and EnvTopic for Kafka.
const (
	BrokerKafka     = "kafka"                   // Kafka: EnvKafkaBrokers, EnvTopic (one partition), EnvGroup
	EnvKafkaBrokers = "ONCEPROOF_KAFKA_BROKERS" // bootstrap host:port, the kit's proxy (ONCEPROOF_BROKER=kafka)
	EnvTopic        = "ONCEPROOF_TOPIC"         // the rule's topic, one partition (ONCEPROOF_BROKER=kafka)
	KafkaIDHeader   = "onceproof-message-id"    // the record header carrying the broker id
)

// BrokerKafkaShare is EnvBroker for a Kafka share group (KIP-932): the
// service reads EnvTopic as a member of the share group EnvGroup; the
// group's lock is EnvAckWait and its delivery limit EnvMaxDeliver.
const BrokerKafkaShare = "kafka-share"

// The fields of a stream entry the kit adds, as broker/redis stores a
// message: the broker id, the payload, and each header under "h:NAME".
const (
	RedisFieldID      = "id"
	RedisFieldPayload = "payload"
	RedisHeaderPrefix = "h:"
)
