package memory

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/onceproof/tck/es"
)

// PacedDB is the reference at the pace of an ordinary networked database
// with fsync: every append holds one lock for a few milliseconds (Min to
// Max, drawn per call) around the reference's own append, so appends from
// every handle run one after another. It is correct; the kit's self-test
// requires it to pass every rule, which keeps the rules honest about a
// store that is slower than the in-process reference (issue 35).
type PacedDB struct {
	db       *DB
	min, max time.Duration
	mu       sync.Mutex // the one write lock: appends are serialized
}

// NewPaced returns an empty paced database whose appends take between min
// and max.
func NewPaced(min, max time.Duration) *PacedDB {
	return &PacedDB{db: NewDB(), min: min, max: max}
}

// Open returns a handle on db.
func (db *PacedDB) Open() es.EventStore { return &pacedStore{Store: db.db.Open(), db: db} }

type pacedStore struct {
	*Store
	db *PacedDB
}

// Append waits for the write lock, holds it for the append's time (the
// caller's context still ends the wait), and appends under it.
func (s *pacedStore) Append(ctx context.Context, st es.Stream) error {
	d := s.db.min
	if s.db.max > s.db.min {
		d += rand.N(s.db.max - s.db.min)
	}
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	return s.Store.Append(ctx, st)
}
