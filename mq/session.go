package mq

import (
	"context"
)

// This file holds the optional parts of a broker that have no NATS or Redis
// counterpart: producer sessions and a group's stored read position. A
// broker that has them implements SessionBroker or GroupOffsets (found by
// type assertion); the rules that need them are not-applicable elsewhere,
// naming the interface.
//
// Kafka mapping: a producer session is one idempotent producer (one producer
// id and epoch, from InitProducerID); the broker de-dupes a retried batch by
// (producer id, epoch, sequence), so a retry inside the session is stored
// once and a re-send from a new session is a new record. A group's position
// is its committed offset per partition (OffsetCommit / OffsetFetch): the
// next record a member of the group reads, not a record of a side effect.

// Producer is one producer session.
type Producer interface {
	// Publish stores m; a retry the client makes on its own, inside the
	// session, is de-duped by the broker where it can.
	Publish(ctx context.Context, topic string, m Message) (PublishAck, error)
	// Close ends the session, as a producer process restart does.
	Close() error
}
