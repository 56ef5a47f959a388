package mq

import (
	"context"
	"errors"
)

// This file holds the optional parts of a broker whose producer learns
// more than "stored" from a publish, and whose queues give up on a message
// into a place the kit can read: what RabbitMQ has (publisher confirms,
// mandatory publishes, dead-letter exchanges). Named by mechanism, not by
// product: another broker with the same mechanisms implements them too;
// the rules needing one are not-applicable elsewhere (Capabilities).
//
// RabbitMQ mapping: a publish is confirmed (basic.ack) once every queue it
// was routed to took it, or refused (basic.nack) when one would not; a
// mandatory publish nothing routes comes back (basic.return) before its
// confirm, and that confirm is a positive one: it says "handled", not
// "stored".

// ErrReturned marks a publish the broker handed back as unroutable (RabbitMQ
// basic.return of a mandatory message): no queue holds it, whatever the
// confirm that follows says.
var ErrReturned = errors.New("returned by the broker as unroutable: not stored")

// ErrNacked marks a publish the broker refused (a negative publisher
// confirm, RabbitMQ basic.nack): it is not a stored message.
var ErrNacked = errors.New("refused by the broker (negative publisher confirm): not stored")

// UnroutablePublisher is a broker whose producer can ask for a publish to
// come back when nothing routes it (Capabilities.Mandatory).
type UnroutablePublisher interface {
	// PublishUnroutable publishes m on topic, mandatory, under a routing
	// key nothing on topic binds: a correct client returns an error
	// wrapping ErrReturned, never a PublishAck.
	PublishUnroutable(ctx context.Context, topic string, m Message) (PublishAck, error)
}

// BoundedTopics is a broker that can refuse a publish its topic has no
// room for, with a negative confirm (Capabilities.PublishNack; RabbitMQ:
// x-max-length with x-overflow reject-publish).
type BoundedTopics interface {
	// CreateBoundedTopic creates topic name holding about max messages
	// and refusing publishes beyond; a refused Publish returns an error
	// wrapping ErrNacked. Its messages are read by a Consumer, not ReadAll.
	CreateBoundedTopic(ctx context.Context, name string, max int) error
}

// DeadLetter is a message a group's queue gave up on, as the dead-letter
// queue holds it.
type DeadLetter struct {
	Stored
	Reason string `json:"reason"` // the broker's word (RabbitMQ x-death reason: delivery_limit, rejected, expired)
	Count  int    `json:"count"`  // times it was dead-lettered for that reason
	Queue  string `json:"queue"`  // the queue it left
}

// DeadLetterReader is a broker whose group with a max-deliver gives up on
// a message into a dead-letter place the kit can read
// (Capabilities.DeadLetter; RabbitMQ: the queue's x-dead-letter-exchange).
type DeadLetterReader interface {
	// DeadLetters returns what group on topic dead-lettered so far.
	DeadLetters(ctx context.Context, topic, group string) ([]DeadLetter, error)
}

// SequencedProducer is one named producer whose publishes carry a
// sequence number the broker de-dupes by (RabbitMQ streams: the producer
// name and the publishing id).
type SequencedProducer interface {
	// Publish stores m under seq; a seq at or below the highest the broker
	// stored for this producer's name is dropped as a duplicate.
	Publish(ctx context.Context, seq int64, m Message) (PublishAck, error)
	// Close ends the producer, as a producer process restart does.
	Close() error
}

// NamedProducers is a broker whose producers de-dupe by name and sequence
// with no window (Capabilities.NamedProducerDedupe).
type NamedProducers interface {
	// NamedProducer starts producer name on topic; a new producer of the
	// same name (a restart) continues where the last one stopped.
	NamedProducer(ctx context.Context, topic, name string) (SequencedProducer, error)
}
