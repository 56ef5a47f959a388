package es

import (
	"errors"
	"fmt"
)

// ErrConflict is matched (errors.Is) by every one of the three typed conflicts,
// so a caller can ask "was this a conflict at all?" before asking which.
var ErrConflict = errors.New("event store conflict")

// ErrInvalidArgument marks a malformed call (an empty aggregate id, a stream
// without events, an invalid version range). It is never a conflict.
var ErrInvalidArgument = errors.New("invalid argument")

// ErrClosed is returned by a store handle after Close.
var ErrClosed = errors.New("event store closed")

// DuplicateRequestIDError: the aggregate already holds a stream with this
// request id (seed: DuplicateRequestIdException).
type DuplicateRequestIDError struct {
	Aggregate AggregateID // the aggregate appended to
	Version   int         // the version the rejected stream asked for
	RequestID string      // the rejected stream's request id
}

// Error names the aggregate, the version and the request id.
func (e *DuplicateRequestIDError) Error() string {
	return fmt.Sprintf("duplicate request id %q on %s (append at version %d)", e.RequestID, e.Aggregate, e.Version)
}

// Is makes errors.Is(err, ErrConflict) hold: a conflict, typed.
func (e *DuplicateRequestIDError) Is(target error) bool { return target == ErrConflict }

// VersionConflictError: the version asked for conflicts with the stored history
// (seed: EventVersionConflictException).
type VersionConflictError struct {
	Aggregate AggregateID // the aggregate appended to
	Version   int         // the version the rejected stream asked for
	RequestID string      // the rejected stream's request id
}

// Error names the aggregate, the version and the request id.
func (e *VersionConflictError) Error() string {
	return fmt.Sprintf("version conflict on %s at version %d (request id %q)", e.Aggregate, e.Version, e.RequestID)
}

// Is makes errors.Is(err, ErrConflict) hold: a conflict, typed.
func (e *VersionConflictError) Is(target error) bool { return target == ErrConflict }

// DuplicateAggregateIDError: a create (initial version) for an aggregate that
// already exists (seed: DuplicateAggregateIdException).
type DuplicateAggregateIDError struct {
	Aggregate AggregateID // the aggregate that already exists
	RequestID string      // the rejected create's request id
}

// Error names the aggregate and the request id.
func (e *DuplicateAggregateIDError) Error() string {
	return fmt.Sprintf("aggregate %s already exists (create with request id %q)", e.Aggregate, e.RequestID)
}

// Is makes errors.Is(err, ErrConflict) hold: a conflict, typed.
func (e *DuplicateAggregateIDError) Is(target error) bool { return target == ErrConflict }
