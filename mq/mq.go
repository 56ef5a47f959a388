// Package mq is the broker vocabulary shared by the broker and consumer
// suites and every broker adapter: publish a message under a stable id, read
// it through a consumer group with ack wait, max-deliver and back-off, settle
// each delivery (ack, nak, term, in-progress), and read back everything a
// topic stores, authoritatively, to count copies.
//
// What an "ack" means differs per broker (seed 002, section 六): NATS
// JetStream acks a delivery of a consumer and redelivers after AckWait; Redis
// Streams' XACK removes the entry from the group's pending list without
// deleting it; Kafka commits an offset. Capabilities say which of these
// behaviours a broker has; a rule needing a missing one is not-applicable.
package mq

import (
	"context"
	"errors"
	"time"
)

// Message is what a producer publishes. ID is the stable message id the
// broker de-duplicates on (NATS Nats-Msg-Id); it is the producer's duty to
// keep it across retries of the same intent.
type Message struct {
	ID      string            `json:"id"`                // the stable message id
	Payload []byte            `json:"payload"`           // opaque, returned byte for byte
	Headers map[string]string `json:"headers,omitempty"` // carried with the message
}

// PublishAck is the broker's reply to a publish.
type PublishAck struct {
	// Position is where the broker stored the message (stream sequence,
	// entry id, partition/offset), or where the first copy is for a
	// duplicate that reports it.
	Position string `json:"position"`
	// Duplicate is true when the broker says it dropped this publish as a
	// duplicate of an earlier one with the same id.
	Duplicate bool `json:"duplicate"`
}

// Retention is how a topic keeps messages.
type Retention string

const (
	// Limits keeps messages until a limit (age, count, size) removes them;
	// an ack does not delete.
	Limits Retention = "limits"
	// WorkQueue removes a message once it is acknowledged.
	WorkQueue Retention = "workqueue"
	// Interest removes a message once every consumer acknowledged it.
	Interest Retention = "interest"
)

// Storage is where a topic keeps its messages.
type Storage string

const (
	FileStorage   Storage = "file"   // an acked publish survives a restart
	MemoryStorage Storage = "memory" // an acked publish does not survive a restart
)

// TopicConfig is what the kit asks for when it creates a topic, and what
// an Inspector reads back. A zero field is the broker's (or the adapter's)
// default.
type TopicConfig struct {
	DedupeWindow time.Duration `json:"dedupeWindow"`       // 0: the broker's default
	Retention    Retention     `json:"retention"`          // "": the broker's default
	Replicas     int           `json:"replicas,omitempty"` // copies in a cluster; 0: the broker's default
	MaxAge       time.Duration `json:"maxAge,omitempty"`   // 0: kept without an age limit
	Storage      Storage       `json:"storage,omitempty"`  // "": the adapter's default
}

// ConsumerConfig opens one member of a consumer group.
type ConsumerConfig struct {
	Group      string          `json:"group"`             // the consumer group the member joins
	AckWait    time.Duration   `json:"ackWait"`           // until an unacked delivery comes back
	MaxDeliver int             `json:"maxDeliver"`        // 0: unlimited
	Backoff    []time.Duration `json:"backoff,omitempty"` // waits after each delivery, overriding AckWait
}

// Delivery is one attempt to hand a message to a consumer.
type Delivery interface {
	// Message is the message delivered.
	Message() Message
	// Attempt is 1 for the first delivery and grows by one per redelivery.
	Attempt() int
	// Position is where the message is stored.
	Position() string
	// Ack acknowledges; where the broker can confirm an ack, Ack returns
	// only after the broker confirmed it.
	Ack(ctx context.Context) error
	// Nak asks for redelivery, not before delay (0: as soon as possible).
	Nak(ctx context.Context, delay time.Duration) error
	// Term stops redelivery of this message for good.
	Term(ctx context.Context) error
	// InProgress pushes the redelivery deadline back by one ack wait.
	InProgress(ctx context.Context) error
}

// Consumer is one member of a consumer group, on its own connection.
type Consumer interface {
	// Fetch returns up to max deliveries, waiting at most wait for the first.
	Fetch(ctx context.Context, max int, wait time.Duration) ([]Delivery, error)
	// Close ends the member as a crash would: its connection closes, its
	// unacknowledged deliveries stay pending at the broker.
	Close() error
}

// Stored is one message as the topic holds it, read back authoritatively.
type Stored struct {
	Message  Message `json:"message"`  // the message as stored
	Position string  `json:"position"` // where it is stored
}

// Broker is one broker target as the suites see it. The kit creates and
// removes its own topics and touches nothing else.
type Broker interface {
	// CreateTopic creates the kit's topic name with cfg.
	CreateTopic(ctx context.Context, name string, cfg TopicConfig) error
	// DeleteTopic deletes the kit's topic and what belongs to it.
	DeleteTopic(ctx context.Context, name string) error
	// Publish publishes m to topic and returns the broker's reply.
	Publish(ctx context.Context, topic string, m Message) (PublishAck, error)
	// Consumer opens a new member of cfg.Group on topic.
	Consumer(ctx context.Context, topic string, cfg ConsumerConfig) (Consumer, error)
	// ReadAll returns every message the topic stores now, in order. A
	// topic the broker does not have is an error wrapping ErrNotFound (a
	// definite answer: what it held is gone); any other error leaves what
	// it holds unknown.
	ReadAll(ctx context.Context, topic string) ([]Stored, error)
	// Capabilities is what the broker declares.
	Capabilities() Capabilities
	// Close releases the handle.
	Close() error
}

// Capabilities is what a broker declares of its server: windows, ack
// waits, retention and the behaviours that depend on its settings. A
// mechanism the kit drives through an optional interface of this package
// (DeadLetterReader, PendingInspector, Trimmer, SessionBroker,
// GroupOffsets, UnroutablePublisher, BoundedTopics) is found by type
// assertion on the handle, as fstest finds an fs.ReadDirFS: a handle that
// does not implement one makes the rules needing it not-applicable, naming
// the interface. Rules needing a capability the broker lacks are
// not-applicable with the capability named.
type Capabilities struct {
	// DedupeWindow is the producer de-dupe window the broker applies to the
	// topics the kit creates; 0 means no producer de-dupe at all.
	DedupeWindow time.Duration `json:"dedupeWindow"`
	// DedupeRefreshOnHit: a duplicate inside the window restarts the window.
	DedupeRefreshOnHit bool `json:"dedupeRefreshOnHit"`
	// DuplicateFlag: the publish reply says when a publish was a duplicate.
	DuplicateFlag bool `json:"duplicateFlag"`
	AckWait       bool `json:"ackWait"`      // unacked deliveries come back by themselves
	ConfirmedAck  bool `json:"confirmedAck"` // the broker confirms an ack
	NakDelay      bool `json:"nakDelay"`     // a nak with a redelivery delay
	Term          bool `json:"term"`         // stop redelivery of one message for good
	MaxDeliver    bool `json:"maxDeliver"`   // a limit on delivery attempts
	InProgress    bool `json:"inProgress"`   // push a delivery's deadline back
	// RebalanceRedelivery: what a member that dies before acking held goes
	// to another member of its group when the group rebalances, with no
	// ack wait (Kafka: uncommitted offsets are re-read by the new owner).
	RebalanceRedelivery bool `json:"rebalanceRedelivery,omitempty"`
	// ConsumerTimeout: the server itself ends a member that holds a
	// delivery past the ack wait (closing its channel) and redelivers what
	// it held; a later ack of such a delivery fails (RabbitMQ
	// consumer_timeout).
	ConsumerTimeout bool `json:"consumerTimeout,omitempty"`
	// NamedProducerDedupe: a producer's publishes carry its name and a
	// sequence, and the broker drops one it already stored, with no window
	// and across a producer restart (NamedProducers; RabbitMQ streams).
	NamedProducerDedupe bool `json:"namedProducerDedupe,omitempty"`
	// ShareGroups: members of a Kafka share group (KIP-932) acquire
	// records under a lock, acknowledge each, and the broker counts
	// deliveries and archives a record at its limit.
	ShareGroups bool `json:"shareGroups,omitempty"`
	// AtomicBatch: the broker stores a batch of messages all or nothing,
	// each member's id de-duplicated (BatchPublisher; NATS 2.12 atomic
	// batch publish on a stream with allow_atomic).
	AtomicBatch bool `json:"atomicBatch,omitempty"`
	// Retentions lists the retention kinds the broker offers.
	Retentions []Retention `json:"retentions"`
	// DedupeAfterRestart lists the retentions under which a message id seen
	// (and, for a work queue, acknowledged) before a broker restart is still
	// dropped as a duplicate after it, inside the window.
	DedupeAfterRestart []Retention `json:"dedupeAfterRestart,omitempty"`
}

// ErrUnsupported is returned for an operation the broker does not have.
var ErrUnsupported = errors.New("not supported by this broker")

// ErrNotFound is what ReadAll wraps for a topic the broker does not
// have (and an inspector for a topic or consumer it does not have).
var ErrNotFound = errors.New("not found on the broker")
