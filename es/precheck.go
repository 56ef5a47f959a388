package es

import "context"

// FastChecker is the cheap, possibly wrong first step of the request-id
// pre-check chain (seed "快速预检与权威确认"): it may answer "maybe duplicate"
// for an id it has never seen (a false positive), never the reverse.
type FastChecker interface {
	// MaybeDuplicate says the id may have been seen (possibly wrongly).
	MaybeDuplicate(agg AggregateID, requestID string) bool
	// Remember records an id that was stored.
	Remember(agg AggregateID, requestID string)
}

// ExistenceChecker is the authoritative query, usually the store itself.
type ExistenceChecker interface {
	// RequestIDExists says whether agg holds a stream with requestID.
	RequestIDExists(ctx context.Context, agg AggregateID, requestID string) (bool, error)
}

// PreChecker decides whether a request may go on to Append. A "maybe" from
// the fast checker must be confirmed by the authority before rejecting; with
// no authority the request is rejected (fail closed). It is an early filter,
// not the final word: Append still enforces uniqueness.
type PreChecker interface {
	// Admit says whether the request may go on (false: a duplicate).
	Admit(ctx context.Context, agg AggregateID, requestID string) (bool, error)
}
