package sinks

import (
	"context"
	"sync"
	"time"

	"github.com/onceproof/tck/co"
)

// Store is a de-dupe store a consumer instance holds a handle on; Close
// releases the handle, never the records.
type Store interface {
	co.Store
	Close() error
}

// MemStore is Store in this process's memory: what an in-process consumer
// gets when no durable store was given (suites/consumer without the option
// of suites/consumer/embedded, which links the SQLite one). Its records
// outlive every consumer instance, as the instances are goroutines of this
// process; every call is one atomic step under the lock.
type MemStore struct {
	mu    sync.Mutex
	clock co.Clock
	recs  map[string]co.Record
}

// NewMemStore makes an empty store whose expiries read clock.
func NewMemStore(clock co.Clock) *MemStore {
	return &MemStore{clock: clock, recs: map[string]co.Record{}}
}

func (s *MemStore) live(key string) (co.Record, bool) {
	r, ok := s.recs[key]
	if ok && !r.Expires.IsZero() && !s.clock.Now().Before(r.Expires) {
		delete(s.recs, key)
		return co.Record{}, false
	}
	return r, ok
}

func (s *MemStore) record(value string, ttl time.Duration) co.Record {
	r := co.Record{Value: value}
	if ttl > 0 {
		r.Expires = s.clock.Now().Add(ttl).UTC()
	}
	return r
}

// Get implements co.Store.
func (s *MemStore) Get(_ context.Context, key string) (co.Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.live(key)
	return r, ok, nil
}

// Insert implements co.Store.
func (s *MemStore) Insert(_ context.Context, key, value string, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.live(key); ok {
		return false, nil
	}
	s.recs[key] = s.record(value, ttl)
	return true, nil
}

// Put implements co.Store.
func (s *MemStore) Put(_ context.Context, key, value string, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs[key] = s.record(value, ttl)
	return nil
}

// CompareAndSwap implements co.Store.
func (s *MemStore) CompareAndSwap(_ context.Context, key, old, value string, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.live(key); !ok || r.Value != old {
		return false, nil
	}
	s.recs[key] = s.record(value, ttl)
	return true, nil
}

// Delete implements co.Store.
func (s *MemStore) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.recs, key)
	return nil
}

// Close implements Store: the records stay for the next handle.
func (s *MemStore) Close() error { return nil }
