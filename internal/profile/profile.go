// Package profile is the pipeline profile of the contract checker: what a
// team built (event store, producers, broker streams and consumers as the
// broker names them, the consumers' de-dupe and ack ordering, the HTTP
// contract for a repeated id), loaded from YAML with errors that name the
// file, line and field, and the static analysis of seed 002 done on it:
// hazards with the rule they relate to, their arithmetic and a timeline, and
// the table of what each acknowledgement proves and what it does not.
//
// Nothing here starts or reaches a target; `tck plan --profile` is its CLI.
package profile

import (
	"fmt"
	"time"

	"github.com/onceproof/tck/internal/tlsmat"
)

// SchemaVersion is the value of the profile's schema field; it changes only
// with the format.
const SchemaVersion = "onceproof.profile/v1"

// Profile is one pipeline as declared by its team.
type Profile struct {
	Schema      string      `yaml:"schema" json:"schema" profile:"required"`
	Name        string      `yaml:"name" json:"name" profile:"required"`
	Description string      `yaml:"description" json:"description,omitempty"`
	EventStore  *EventStore `yaml:"eventStore" json:"eventStore,omitempty"`
	HTTP        *HTTP       `yaml:"http" json:"http,omitempty"`
	Producers   []Producer  `yaml:"producers" json:"producers,omitempty"`
	Brokers     []Broker    `yaml:"brokers" json:"brokers,omitempty"`
	Consumers   []Consumer  `yaml:"consumers" json:"consumers,omitempty"`
	// TLS is the trust material for the run's external targets, paths
	// relative to the profile; tck run's --tls-* flags win (docs/tls.md).
	TLS *tlsmat.Files `yaml:"tls" json:"tls,omitempty"`

	file string         // where it was loaded from, for positions
	pos  map[string]int // field path -> line
}

// EventStore is the authoritative store behind the command side (seed 000).
type EventStore struct {
	Name string `yaml:"name" json:"name" profile:"required"`
	// RequestIDScope is where a requestId must be unique: per aggregate is
	// the contract (ES-1.5, ES-1.6).
	RequestIDScope Scope `yaml:"requestIdScope" json:"requestIdScope" profile:"required"`
	// RetryReusesRequestID: a caller that timed out retries the same intent
	// with the same requestId, never a fresh one (ES-1.7).
	RetryReusesRequestID bool `yaml:"retryReusesRequestId" json:"retryReusesRequestId"`
}

// Scope of request-id uniqueness in the event store.
type Scope string

const (
	ScopeAggregate Scope = "aggregate"
	ScopeGlobal    Scope = "global"
	ScopeNone      Scope = "none"
)

// Material is the profile's trust material (its tls section, paths from
// the profile's folder); empty without one.
func (p *Profile) Material() tlsmat.Material {
	if p == nil || p.TLS == nil {
		return tlsmat.Material{}
	}
	return p.TLS.Material(p.file)
}

// HTTP is the client-facing contract for a repeated message id.
type HTTP struct {
	// IDField names the client's message id (e.g. message_id); for the text only.
	IDField    string   `yaml:"idField" json:"idField,omitempty"`
	RepeatedID Repeated `yaml:"repeatedId" json:"repeatedId" profile:"required"`
}

// Repeated is what the HTTP API answers to a repeated id.
type Repeated string

const (
	RepeatedConflict Repeated = "conflict" // 409, the original unchanged (seed 002 §七)
	RepeatedReplay   Repeated = "replay"   // the first response replayed
)

// Producer publishes events to one broker stream.
type Producer struct {
	Name   string `yaml:"name" json:"name" profile:"required"`
	Broker string `yaml:"broker" json:"broker" profile:"required"`
	Stream string `yaml:"stream" json:"stream" profile:"required"`
	// MessageID names the field sent as the broker's message id
	// (Nats-Msg-Id), e.g. event_id; for the text only.
	MessageID string `yaml:"messageId" json:"messageId,omitempty"`
	// KeepsMessageID: every retry carries the first attempt's id.
	KeepsMessageID bool `yaml:"keepsMessageId" json:"keepsMessageId" profile:"required"`
	// Retries are the retry times after the first attempt, ascending.
	Retries []Duration `yaml:"retries" json:"retries,omitempty"`
	// AssumesRefreshOnHit: the producer counts on a duplicate hit restarting
	// the broker's de-dupe window (a window that slides with each retry).
	AssumesRefreshOnHit bool `yaml:"assumesRefreshOnHit" json:"assumesRefreshOnHit"`
	// AfterCommit: what it publishes is a change a database transaction
	// committed first (the DB -> broker gap of seed 002 §七).
	AfterCommit bool `yaml:"afterCommit" json:"afterCommit"`
	// Outbox: the change and its pending event are committed in one local
	// transaction, and a relay feeds the broker from it.
	Outbox bool `yaml:"outbox" json:"outbox"`
	// Subject is the NATS subject it publishes to: a consumer's filter
	// subject that does not match it never sees its events (BR-6.1).
	Subject string `yaml:"subject" json:"subject,omitempty"`
	// Kafka is its Kafka client's settings (kafka.go).
	Kafka *KafkaProducer `yaml:"kafka" json:"kafka,omitempty"`
	// RabbitMQ is its channel's settings (rabbitmq.go).
	RabbitMQ *RabbitMQProducer `yaml:"rabbitmq" json:"rabbitmq,omitempty"`
}

// Broker is one broker installation.
type Broker struct {
	Name    string     `yaml:"name" json:"name" profile:"required"`
	Kind    BrokerKind `yaml:"kind" json:"kind" profile:"required"`
	Streams []Stream   `yaml:"streams" json:"streams,omitempty"`
	// Redis and Kafka are the server-wide settings the team relies on, in
	// the product's words (redis.go, kafka.go).
	Redis *RedisServer `yaml:"redis" json:"redis,omitempty"`
	Kafka *KafkaBroker `yaml:"kafka" json:"kafka,omitempty"`
	// KafkaShare is the cluster's share-group defaults (kafkashare.go).
	KafkaShare *KafkaShareBroker `yaml:"kafkaShare" json:"kafkaShare,omitempty"`
	// RabbitMQ is the node's version and consumer_timeout (rabbitmq.go).
	RabbitMQ *RabbitMQServer `yaml:"rabbitmq" json:"rabbitmq,omitempty"`
	// NATS is the server's JetStream sync settings and its monitoring
	// endpoint (durability.go).
	NATS *NATSServer `yaml:"nats" json:"nats,omitempty"`
	// Durability is what the pipeline relies on of an acknowledged
	// publish: surviving a power loss (durability.go).
	Durability *Durability `yaml:"durability" json:"durability,omitempty"`
}

// BrokerKind names the product; the settings below use its own words.
type BrokerKind string

const (
	KindNATS  BrokerKind = "nats"
	KindRedis BrokerKind = "redis" // Redis Streams: a stream key, groups, XACK/PEL
	KindKafka BrokerKind = "kafka" // a topic, groups, offsets
	// KindRabbitMQ: a stream is a queue (classic, quorum or stream), a
	// broker consumer an application's consumer of it.
	KindRabbitMQ BrokerKind = "rabbitmq"
)

// NATSDefaultDuplicates is JetStream's de-dupe window when none is set.
const NATSDefaultDuplicates = 2 * time.Minute

// NATSDefaultAckWait is JetStream's ack wait when none is set.
const NATSDefaultAckWait = 30 * time.Second

// Stream is a NATS stream (a Redis stream key, a Kafka topic), named and
// configured as on the server.
type Stream struct {
	Name     string   `yaml:"name" json:"name" profile:"required"`
	Subjects []string `yaml:"subjects" json:"subjects,omitempty"`
	// Duplicates is the de-dupe window (NATS Duplicates); 0: the default.
	Duplicates Duration `yaml:"duplicates" json:"duplicates,omitempty"`
	// DuplicatesRefreshOnHit: a duplicate inside the window restarts it.
	// NATS: false, the window runs from the first store (BR-1.4 measures it).
	DuplicatesRefreshOnHit bool      `yaml:"duplicatesRefreshOnHit" json:"duplicatesRefreshOnHit"`
	Retention              Retention `yaml:"retention" json:"retention"`
	// MaxAge bounds how long a message is kept (0: unlimited).
	MaxAge    Duration         `yaml:"maxAge" json:"maxAge,omitempty"`
	Storage   Storage          `yaml:"storage" json:"storage,omitempty"`
	Replicas  int              `yaml:"replicas" json:"replicas,omitempty"`
	Consumers []BrokerConsumer `yaml:"consumers" json:"consumers,omitempty"`
	// Discard is what a full NATS stream does: old drops the oldest
	// message, new refuses the publish (absent: old).
	Discard Discard `yaml:"discard" json:"discard,omitempty"`
	// MaxMsgs, MaxBytes, MaxMsgsPerSubject and MaxMsgSize are the NATS
	// stream limits (0: unlimited).
	MaxMsgs           int `yaml:"maxMsgs" json:"maxMsgs,omitempty"`
	MaxBytes          int `yaml:"maxBytes" json:"maxBytes,omitempty"`
	MaxMsgsPerSubject int `yaml:"maxMsgsPerSubject" json:"maxMsgsPerSubject,omitempty"`
	MaxMsgSize        int `yaml:"maxMsgSize" json:"maxMsgSize,omitempty"`
	// AllowAtomic is the NATS stream's allow_atomic: it takes atomic batch
	// publishes (NATS 2.12, ADR-50; BR-8.x check them). Absent: false.
	AllowAtomic bool `yaml:"allowAtomic" json:"allowAtomic,omitempty"`
	// Redis is a Redis stream key's trim policy (redis.go); Kafka a
	// topic's settings (kafka.go).
	Redis *RedisStream `yaml:"redis" json:"redis,omitempty"`
	Kafka *KafkaTopic  `yaml:"kafka" json:"kafka,omitempty"`
	// RabbitMQ is a queue's arguments (rabbitmq.go).
	RabbitMQ *RabbitMQQueue `yaml:"rabbitmq" json:"rabbitmq,omitempty"`
}

// Discard is a NATS stream's discard policy.
type Discard string

const (
	DiscardOld Discard = "old"
	DiscardNew Discard = "new" // a full stream refuses the publish
)

// DeliverPolicy is where a NATS consumer starts.
type DeliverPolicy string

const (
	DeliverAll            DeliverPolicy = "all"
	DeliverLast           DeliverPolicy = "last"
	DeliverNew            DeliverPolicy = "new"
	DeliverByStartSeq     DeliverPolicy = "by_start_sequence"
	DeliverByStartTime    DeliverPolicy = "by_start_time"
	DeliverLastPerSubject DeliverPolicy = "last_per_subject"
)

// ReplayPolicy is how fast a NATS consumer replays stored messages.
type ReplayPolicy string

const (
	ReplayInstant  ReplayPolicy = "instant"
	ReplayOriginal ReplayPolicy = "original"
)

// NATSDefaultMaxAckPending is JetStream's max_ack_pending when none is set.
const NATSDefaultMaxAckPending = 1000

// Retention is how a stream keeps messages.
type Retention string

const (
	RetentionLimits    Retention = "limits"    // kept until max age/size: an ack is not a delete
	RetentionWorkQueue Retention = "workqueue" // the ack removes it
	RetentionInterest  Retention = "interest"  // removed once every consumer acked
)

// Storage is where the stream keeps messages.
type Storage string

const (
	StorageFile   Storage = "file"
	StorageMemory Storage = "memory"
)

// BrokerConsumer is a NATS consumer (a Redis group, a Kafka group) as the
// server names and configures it.
type BrokerConsumer struct {
	Name      string    `yaml:"name" json:"name" profile:"required"`
	AckPolicy AckPolicy `yaml:"ackPolicy" json:"ackPolicy,omitempty"`
	// AckWait: an unacked delivery comes back after it (0: the default).
	AckWait Duration `yaml:"ackWait" json:"ackWait,omitempty"`
	// Backoff overrides AckWait per redelivery: the wait after delivery k is
	// Backoff[min(k-1, len-1)], as the NATS server computes it.
	Backoff []Duration `yaml:"backoff" json:"backoff,omitempty"`
	// MaxDeliver bounds deliveries of one message (0 or -1: unlimited).
	MaxDeliver int `yaml:"maxDeliver" json:"maxDeliver,omitempty"`
	// FilterSubjects are the subjects it delivers (absent: all of the
	// stream's).
	FilterSubjects []string `yaml:"filterSubjects" json:"filterSubjects,omitempty"`
	// DeliverPolicy is where it starts (absent: all).
	DeliverPolicy DeliverPolicy `yaml:"deliverPolicy" json:"deliverPolicy,omitempty"`
	// ReplayPolicy (absent: instant).
	ReplayPolicy ReplayPolicy `yaml:"replayPolicy" json:"replayPolicy,omitempty"`
	// MaxAckPending bounds the deliveries out and not acked (absent: the
	// NATS default, 1000; -1: unlimited).
	MaxAckPending int `yaml:"maxAckPending" json:"maxAckPending,omitempty"`
	// Redis is a Redis group's members and claim time (redis.go).
	Redis *RedisGroup `yaml:"redis" json:"redis,omitempty"`
	// RabbitMQ is a RabbitMQ consumer's prefetch and ack mode (rabbitmq.go).
	RabbitMQ *RabbitMQConsumer `yaml:"rabbitmq" json:"rabbitmq,omitempty"`
	// KafkaShare makes it a Kafka share group (kafkashare.go).
	KafkaShare *KafkaShareGroup `yaml:"kafkaShare" json:"kafkaShare,omitempty"`
}

// AckPolicy is the NATS consumer's ack policy.
type AckPolicy string

const (
	AckExplicit AckPolicy = "explicit"
	AckAll      AckPolicy = "all"
	AckNone     AckPolicy = "none" // acked on delivery: nothing comes back
)

// Consumer is an application consumer: what it does with a delivery.
type Consumer struct {
	Name           string `yaml:"name" json:"name" profile:"required"`
	Broker         string `yaml:"broker" json:"broker" profile:"required"`
	Stream         string `yaml:"stream" json:"stream" profile:"required"`
	BrokerConsumer string `yaml:"brokerConsumer" json:"brokerConsumer" profile:"required"`
	// Scopes are its side effects, each with its own completion.
	Scopes []EffectScope `yaml:"scopes" json:"scopes" profile:"required"`
	// Dedupe is its de-dupe record; absent: none.
	Dedupe   *Dedupe  `yaml:"dedupe" json:"dedupe,omitempty"`
	AckOrder AckOrder `yaml:"ackOrder" json:"ackOrder" profile:"required"`
	// Reconciliation: a rebuild or reconcile restores an effect that an
	// ack-first crash lost (CO-2.2).
	Reconciliation bool `yaml:"reconciliation" json:"reconciliation"`
	// MaxReplayAge bounds how old a message an operator may replay to it;
	// absent: whatever the stream's retention keeps; 0s: never replayed.
	MaxReplayAge *Duration `yaml:"maxReplayAge" json:"maxReplayAge,omitempty"`
	// Envelope is where this consumer's events carry the kit's fields
	// (consumer/process publishes its events in that shape); absent: the
	// kit's documented envelope (docs/consumer-service.md).
	Envelope *Envelope `yaml:"envelope" json:"envelope,omitempty"`
	// Workers is how many deliveries it processes at once (absent: 1).
	Workers int `yaml:"workers" json:"workers,omitempty"`
	// ProcessingTime is the longest one delivery's effects take.
	ProcessingTime Duration `yaml:"processingTime" json:"processingTime,omitempty"`
}

// Envelope maps each field of the kit's event to where the service reads
// it: a dotted JSON path into the payload ("meta.id": key id of object
// meta) or "header:NAME" (a NATS message header, its text). messageId and
// version are the business identity and always mapped; eventId and body
// are left out of the event when not mapped. envelope.go has the syntax.
type Envelope struct {
	MessageID string `yaml:"messageId" json:"messageId" profile:"required"`
	Version   string `yaml:"version" json:"version" profile:"required"`
	EventID   string `yaml:"eventId" json:"eventId,omitempty"`
	Body      string `yaml:"body" json:"body,omitempty"`
}

// EffectScope is one side effect of a consumer.
type EffectScope struct {
	Name   string `yaml:"name" json:"name" profile:"required"`
	Effect Effect `yaml:"effect" json:"effect" profile:"required"`
}

// Effect says what repeating a scope's effect does.
type Effect string

const (
	// EffectVersionedUpsert: an atomic conditional write to at least the
	// event's version; a repeat or a stale version changes nothing.
	EffectVersionedUpsert Effect = "versioned-upsert"
	// EffectUpsert: an unconditional write by a stable id; a repeat of the
	// same version converges, a stale version overwrites a newer one.
	EffectUpsert Effect = "upsert"
	// EffectNotIdempotent: a repeat is a second effect (a notification).
	EffectNotIdempotent Effect = "not-idempotent"
)

// Dedupe is a consumer's de-dupe record.
type Dedupe struct {
	// Key lists what the record is keyed by.
	Key []KeyPart `yaml:"key" json:"key" profile:"required"`
	// Lifetime is how long a record lives (0: forever).
	Lifetime Duration `yaml:"lifetime" json:"lifetime,omitempty" profile:"required"`
	Store    Store    `yaml:"store" json:"store" profile:"required"`
}

// KeyPart is one component of a de-dupe key.
type KeyPart string

const (
	KeyMessageID KeyPart = "messageId" // the business message (m-9)
	KeyVersion   KeyPart = "version"   // its version (v1, v2)
	KeyEventID   KeyPart = "eventId"   // one per change (evt:m-9:v1): carries the version
	KeyScope     KeyPart = "scope"     // the side effect (SearchIndex, Notify)
)

// Store is where de-dupe records are kept.
type Store string

const (
	StoreDurable Store = "durable" // survives a restart of the consumer
	StoreMemory  Store = "memory"  // lost with the process
)

// AckOrder is the order of the effect and the ack.
type AckOrder string

const (
	EffectThenAck AckOrder = "effect-then-ack"
	AckThenEffect AckOrder = "ack-then-effect"
)

// Duration is a YAML duration written as Go writes one ("5m", "30s",
// "1h30m"); a bare number is refused, since its unit would be a guess.
type Duration time.Duration

// D is the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the same text the YAML takes.
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(fmt.Sprintf("%q", d.String())), nil }

// File is where the profile was loaded from.
func (p *Profile) File() string { return p.file }

// Line is the line of the field at path (e.g. producers[0].retries[1]), or
// of its nearest declared parent, or 0.
func (p *Profile) Line(path string) int {
	for path != "" {
		if l, ok := p.pos[path]; ok {
			return l
		}
		path = parent(path)
	}
	return 0
}

// parent strips the last element of a field path.
func parent(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		switch path[i] {
		case '.':
			return path[:i]
		case '[':
			return path[:i]
		}
	}
	return ""
}

// broker finds a broker and stream by name.
func (p *Profile) stream(broker, stream string) (*Broker, *Stream) {
	for i := range p.Brokers {
		b := &p.Brokers[i]
		if b.Name != broker {
			continue
		}
		for j := range b.Streams {
			if b.Streams[j].Name == stream {
				return b, &b.Streams[j]
			}
		}
		return b, nil
	}
	return nil, nil
}

func (s *Stream) consumer(name string) *BrokerConsumer {
	for i := range s.Consumers {
		if s.Consumers[i].Name == name {
			return &s.Consumers[i]
		}
	}
	return nil
}
