package mq

import (
	"context"
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

// DeadLetter is a message a group's queue gave up on, as the dead-letter
// queue holds it.
type DeadLetter struct {
	Stored
	Reason string `json:"reason"` // the broker's word (RabbitMQ x-death reason: delivery_limit, rejected, expired)
	Count  int    `json:"count"`  // times it was dead-lettered for that reason
	Queue  string `json:"queue"`  // the queue it left
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
