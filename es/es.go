// Package es is the event-store vocabulary shared by the eventstore suite and
// every event-store adapter: the stream an Append writes, the EventStore
// contract, the typed conflicts of the seed ("EventStore 持久约束") and the
// capabilities an adapter declares.
package es

import (
	"context"
	"fmt"
)

// InitialVersion is the version of the stream that creates an aggregate.
const InitialVersion = 1

// AggregateID identifies one aggregate. Two ids that differ in any field are
// different aggregates (rule ES-1.13), even when ID is the same.
type AggregateID struct {
	Context string `json:"context"` // bounded context
	Name    string `json:"name"`    // aggregate name (type)
	ID      string `json:"id"`      // the aggregate's own id
	Tenant  string `json:"tenant"`  // the tenant it belongs to
}

// String is the id as the kit's messages print it: context.name/id@tenant.
func (a AggregateID) String() string {
	return fmt.Sprintf("%s.%s/%s@%s", a.Context, a.Name, a.ID, a.Tenant)
}

// Event is one domain event inside a stream. Body is opaque: a store must
// return it byte for byte.
type Event struct {
	Name string `json:"name"` // the event's type
	Body []byte `json:"body"` // the payload, stored and returned byte for byte
}

// Stream is what one command appends: one version of one aggregate, carrying
// the caller's request id (the business intent, stable across retries) and the
// command id (this one attempt), and one or more events.
type Stream struct {
	Aggregate AggregateID `json:"aggregate"` // the aggregate appended to
	Version   int         `json:"version"`   // the version it takes (InitialVersion creates)
	RequestID string      `json:"requestId"` // the business intent, unique per aggregate
	CommandID string      `json:"commandId"` // this one attempt
	Events    []Event     `json:"events"`    // one or more, stored all or none
}

// EventStore is the contract under test.
//
// Append must raise the three conflicts inside the store's own atomic write
// boundary: a check made before the write and outside it lets two concurrent
// appends both pass (the seed: "先查询、后写入"的应用逻辑不能替代该约束).
type EventStore interface {
	// Append stores the stream atomically, or nothing. Conflicts are reported
	// as *DuplicateRequestIDError, *VersionConflictError or
	// *DuplicateAggregateIDError; every other failure is returned as is.
	Append(ctx context.Context, s Stream) error
	// Load returns the streams of the aggregate whose version lies in
	// [from, to], in ascending version order. An unknown aggregate yields no
	// streams and no error. from < 1 or to < from is ErrInvalidArgument.
	Load(ctx context.Context, agg AggregateID, from, to int) ([]Stream, error)
	// RequestIDExists is the authoritative query: does the stored history of
	// this aggregate hold a stream with this request id?
	RequestIDExists(ctx context.Context, agg AggregateID, requestID string) (bool, error)
	// Close releases the handle; later calls fail with an error that is not a
	// conflict.
	Close() error
}

// Capabilities is what an adapter declares about itself. The suite measures
// the declared properties and fails a characterization rule only where the
// measurement contradicts the declaration.
type Capabilities struct {
	// AcceptsVersionGap: an append at tail+2 is stored rather than refused
	// with a version conflict (rule ES-1.11).
	AcceptsVersionGap bool `json:"acceptsVersionGap"`
	// PreCheck, when set, builds the adapter's request-id pre-check chain
	// from a fast checker and an authoritative query (nil authority means
	// the store offers none). Rule ES-3.1 is not applicable without it.
	PreCheck func(fast FastChecker, authority ExistenceChecker) PreChecker `json:"-"`
}
