package mq

import (
	"context"
	"errors"
	"time"
)

// ErrBatchRefused marks a batch the broker refused whole, with a definite
// answer (NATS: a batch over the server's size limit, a member whose
// Nats-Msg-Id is a duplicate, a batch with a gap): nothing of it is stored
// by this attempt.
var ErrBatchRefused = errors.New("the broker refused the batch whole: nothing of it stored by this attempt")

// ErrBatchAbandoned marks a batch the broker dropped before its commit
// because members were missing when it looked (NATS: the batch sat idle
// past its timeout, err_code 10176): nothing of it is stored, and the
// refusal says nothing about the batch's size or content.
var ErrBatchAbandoned = errors.New("the broker abandoned the batch before its commit (a member missing, or idle past its timeout): nothing of it stored by this attempt")

// ErrCommitUnconfirmed marks a batch whose commit was sent without waiting
// for the broker's reply (Batch.NoCommitReply): whether it was stored is
// unknown to the publisher, as after a commit reply lost on the way.
var ErrCommitUnconfirmed = errors.New("the commit was sent without waiting for its reply: whether the batch was stored is unknown")

// Batch is a multi-message intent the broker stores atomically: every
// member at consecutive positions, or none (NATS atomic batch publish,
// ADR-50).
type Batch struct {
	// ID names the batch to the broker (NATS Nats-Batch-Id, at most 64
	// characters). A retry of the same intent keeps it, and keeps every
	// member's Message.ID.
	ID string
	// Messages are the members, in order; each member's ID is de-duplicated
	// as a single publish's is (NATS Nats-Msg-Id).
	Messages []Message
	// Abandon, when above 0, makes the publisher send that many members
	// and stop without committing, as a publisher that dies mid-batch: its
	// connection closes. PublishBatch then returns no error once the
	// members were sent.
	Abandon int
	// NoCommitReply sends the commit without waiting for the broker's
	// reply, as a publisher whose commit reply is lost: PublishBatch
	// returns an error wrapping ErrCommitUnconfirmed once it was sent.
	NoCommitReply bool
}

// BatchAck is the broker's reply to a committed batch.
type BatchAck struct {
	// Positions are where the members were stored, in order.
	Positions []string `json:"positions"`
}

// BatchLimits are the limits a broker applies to atomic batches.
type BatchLimits struct {
	// MaxMessages is the most members a batch may have; a larger batch is
	// refused whole (NATS: max_batch_size, default 1000).
	MaxMessages int `json:"maxMessages"`
	// Abandon is how long a batch may sit uncommitted after its last member
	// before the broker abandons it (NATS: max_batch_timeout, default 10 s).
	Abandon time.Duration `json:"abandon"`
}

// BatchPublisher is a broker that publishes a batch of messages atomically
// (Capabilities.AtomicBatch; NATS: a stream with allow_atomic).
type BatchPublisher interface {
	// PublishBatch publishes b on topic. A committed batch returns where
	// each member is stored; a batch the broker refused returns an error
	// wrapping ErrBatchRefused; any other error leaves the outcome unknown.
	PublishBatch(ctx context.Context, topic string, b Batch) (BatchAck, error)
	// BatchLimits reports the limits the broker applies to batches.
	BatchLimits() BatchLimits
}
