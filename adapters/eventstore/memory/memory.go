// Package memory is the reference event store: small and obviously right.
// One mutex is the atomic write boundary; every check Append makes happens
// under it together with the write.
package memory

import (
	"context"
	"fmt"
	"sync"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/eskit"
)

// DB is the shared in-memory state; handles opened on it see the same data.
type DB struct {
	mu      sync.Mutex
	streams map[es.AggregateID][]es.Stream         // ascending by version
	reqs    map[es.AggregateID]map[string]struct{} // request ids per aggregate
}

// NewDB returns an empty database.
func NewDB() *DB {
	return &DB{streams: map[es.AggregateID][]es.Stream{}, reqs: map[es.AggregateID]map[string]struct{}{}}
}

// Open returns a handle on db.
func (db *DB) Open() *Store { return &Store{db: db} }

// handle is embedded under an unexported name: an outside user of Store
// sees its Close and Usable, not a type of the kit's internal/eskit.
type handle = eskit.Handle

// Store is a handle; it implements es.EventStore.
type Store struct {
	db     *DB
	handle // closed flag; Close (eskit.Handle)
}

// Append implements es.EventStore.
func (s *Store) Append(ctx context.Context, st es.Stream) error {
	if err := s.Usable(ctx); err != nil {
		return err
	}
	if err := eskit.Validate(st); err != nil {
		return err
	}
	db := s.db
	db.mu.Lock()
	defer db.mu.Unlock()
	agg := st.Aggregate
	history := db.streams[agg]
	tail := 0
	if n := len(history); n > 0 {
		tail = history[n-1].Version
	}
	switch {
	case st.Version == es.InitialVersion && tail > 0:
		// An exact retry of the create reports the duplicate request id:
		// it tells the caller its own request already succeeded.
		if _, dup := db.reqs[agg][st.RequestID]; dup {
			return &es.DuplicateRequestIDError{Aggregate: agg, Version: st.Version, RequestID: st.RequestID}
		}
		return &es.DuplicateAggregateIDError{Aggregate: agg, RequestID: st.RequestID}
	case st.Version != tail+1:
		return &es.VersionConflictError{Aggregate: agg, Version: st.Version, RequestID: st.RequestID}
	}
	if _, dup := db.reqs[agg][st.RequestID]; dup {
		return &es.DuplicateRequestIDError{Aggregate: agg, Version: st.Version, RequestID: st.RequestID}
	}
	if db.reqs[agg] == nil {
		db.reqs[agg] = map[string]struct{}{}
	}
	db.reqs[agg][st.RequestID] = struct{}{}
	db.streams[agg] = append(history, clone(st))
	return nil
}

// Load implements es.EventStore.
func (s *Store) Load(ctx context.Context, agg es.AggregateID, from, to int) ([]es.Stream, error) {
	if err := s.Usable(ctx); err != nil {
		return nil, err
	}
	if err := eskit.ValidateRange(from, to); err != nil {
		return nil, err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	var out []es.Stream
	for _, st := range s.db.streams[agg] {
		if st.Version >= from && st.Version <= to {
			out = append(out, clone(st))
		}
	}
	return out, nil
}

// RequestIDExists implements es.EventStore.
func (s *Store) RequestIDExists(ctx context.Context, agg es.AggregateID, requestID string) (bool, error) {
	if err := s.Usable(ctx); err != nil {
		return false, err
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	_, ok := s.db.reqs[agg][requestID]
	return ok, nil
}

// clone copies a stream so callers cannot alias stored bytes.
func clone(st es.Stream) es.Stream {
	c := st
	c.Events = make([]es.Event, len(st.Events))
	for i, e := range st.Events {
		c.Events[i] = es.Event{Name: e.Name, Body: append([]byte(nil), e.Body...)}
	}
	return c
}

var _ es.EventStore = (*Store)(nil)

// String names the adapter in reports.
func (s *Store) String() string { return fmt.Sprintf("memory event store %p", s.db) }
