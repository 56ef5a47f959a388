// The optional parts of a broker beyond Broker, which the rules probe for
// with a type assertion: producer sessions and named producers, a group's
// read position, its pending list and dead letters, a topic cut, publisher
// confirms and returns, max-deliver advisories, and the read-only Inspector
// a profile is certified with. A rule needing one the broker does not
// implement is not-applicable with the interface named; a broker of an
// author's implements them as the kit's own adapters do. They are named by
// mechanism, not by product: another broker with the same mechanism
// implements them too.

package mq

import (
	"context"
	"errors"
)

// ErrReturned marks a publish the broker handed back as unroutable (RabbitMQ
// basic.return of a mandatory message): no queue holds it, whatever the
// confirm that follows says.
var ErrReturned = errors.New("returned by the broker as unroutable: not stored")

// ErrNacked marks a publish the broker refused (a negative publisher
// confirm, RabbitMQ basic.nack): it is not a stored message.
var ErrNacked = errors.New("refused by the broker (negative publisher confirm): not stored")

// ErrNotPending marks a settle (an ack, an in-progress) the broker answered
// definitely: it holds no such unsettled delivery (Redis: XACK replied 0,
// the entry is not on the group's pending list). It is an answer, not a
// lost one: the rule weighs it against what the kit itself did with the
// delivery (read it into its own member's pending list, never acked it,
// never trimmed the topic), and where that makes the answer impossible it
// is positive evidence against the target.
var ErrNotPending = errors.New("the broker answered that the delivery was not pending")

// UnroutablePublisher is a broker whose producer can ask for a publish to
// come back when nothing routes it. Like every optional interface here it
// is found by type assertion on the handle: the rules that need it are
// not-applicable, naming it, on a handle without it.
type UnroutablePublisher interface {
	// PublishUnroutable publishes m on topic, mandatory, under a routing
	// key nothing on topic binds: a correct client returns an error
	// wrapping ErrReturned, never a PublishAck.
	PublishUnroutable(ctx context.Context, topic string, m Message) (PublishAck, error)
}

// BoundedTopics is a broker that can refuse a publish its topic has no
// room for, with a negative confirm (found by type assertion; RabbitMQ:
// x-max-length with x-overflow reject-publish).
type BoundedTopics interface {
	// CreateBoundedTopic creates topic name holding about max messages
	// and refusing publishes beyond; a refused Publish returns an error
	// wrapping ErrNacked. Its messages are read by a Consumer, not ReadAll.
	CreateBoundedTopic(ctx context.Context, name string, max int) error
}

// DeadLetterReader is a broker whose group with a max-deliver gives up on
// a message into a dead-letter place the kit can read
// (found by type assertion; RabbitMQ: the queue's x-dead-letter-exchange).
type DeadLetterReader interface {
	// DeadLetters returns what group on topic dead-lettered so far.
	DeadLetters(ctx context.Context, topic, group string) ([]DeadLetter, error)
}

// NamedProducers is a broker whose producers de-dupe by name and sequence
// with no window (Capabilities.NamedProducerDedupe).
type NamedProducers interface {
	// NamedProducer starts producer name on topic; a new producer of the
	// same name (a restart) continues where the last one stopped.
	NamedProducer(ctx context.Context, topic, name string) (SequencedProducer, error)
}

// Inspector reads settings from the broker by name and changes nothing: it
// is how the kit certifies a team's own topics and consumers, which it may
// only read.
type Inspector interface {
	// Topic reads the topic the broker calls name.
	Topic(ctx context.Context, name string) (TopicInfo, error)
	// Consumer reads consumer group name on topic.
	Consumer(ctx context.Context, topic, name string) (ConsumerInfo, error)
	// Server reads the server's version and settings.
	Server(ctx context.Context) (ServerInfo, error)
	// Close releases the view.
	Close() error
}

// MaxDeliverWatcher is implemented by brokers that announce when a message
// has used up its max-deliver attempts (NATS: the
// $JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES advisory).
type MaxDeliverWatcher interface {
	// WatchMaxDeliver sends the position of every message of topic that
	// group gave up on, until ctx ends.
	WatchMaxDeliver(ctx context.Context, topic, group string) (<-chan string, error)
}

// PendingInspector is implemented by brokers that keep, per consumer group,
// the list of delivered, unacknowledged entries and let the kit read it
// (found by type assertion).
type PendingInspector interface {
	// Pending returns the pending list of group on topic, in position order.
	Pending(ctx context.Context, topic, group string) ([]Pending, error)
}

// Trimmer is implemented by brokers that can cut a topic to its newest
// messages on request (found by type assertion).
type Trimmer interface {
	// Trim keeps the newest keep messages of topic and removes the rest.
	Trim(ctx context.Context, topic string, keep int) (Trim, error)
}

// SessionBroker is a broker whose producers have sessions.
type SessionBroker interface {
	// Producer starts a new producer session (Kafka: a new producer id).
	Producer(ctx context.Context) (Producer, error)
}

// AckedInspector is a broker that can tell, changing nothing, whether a
// consumer group holds a stored message as acknowledged (NATS: the
// consumer's ack floor has reached its stream sequence). A rule that never
// acked a delivery weighs a yes as positive evidence: an ack the kit never
// sent.
type AckedInspector interface {
	Acked(ctx context.Context, topic, group, position string) (bool, error)
}

// GroupOffsets is a broker whose consumer group keeps a read position per
// topic that can be read and set.
type GroupOffsets interface {
	// Committed is group's committed position on topic: the Position of
	// the next message a member of the group reads ("" when nothing was
	// committed).
	Committed(ctx context.Context, topic, group string) (string, error)
	// Reset sets group's position on topic to position (a Position the
	// broker gave a stored message); the group's next member reads from
	// there. No member of the group may be open.
	Reset(ctx context.Context, topic, group, position string) error
}
