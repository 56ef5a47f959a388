package sinks

import (
	"context"
	"sync"
	"time"

	"github.com/onceproof/tck/co"
)

// Effect is one observed side effect: a write that changed the index, or a
// notification sent.
type Effect struct {
	Scope     string    `json:"scope"`
	MessageID string    `json:"messageId"`
	Version   int       `json:"version"`
	Body      string    `json:"body,omitempty"`
	At        time.Time `json:"at"` // scaled clock
}

// MemIndex is the kit's search index: documents behind one mutex, and a log
// of effects. A write that leaves the stored document unchanged (the same
// version and body again) is not an effect: that is what "converges" means
// for an index. A write that changes it is one effect for the written
// (message, version).
type MemIndex struct {
	clock co.Clock
	mu    sync.Mutex
	docs  map[string]co.Doc
	log   []Effect
}

// NewIndex returns an empty index reading clock for effect times.
func NewIndex(clock co.Clock) *MemIndex {
	return &MemIndex{clock: clock, docs: map[string]co.Doc{}}
}

func (x *MemIndex) write(doc co.Doc) bool {
	if cur, ok := x.docs[doc.ID]; ok && cur == doc {
		return false
	}
	x.docs[doc.ID] = doc
	x.log = append(x.log, Effect{Scope: co.ScopeIndex, MessageID: doc.ID, Version: doc.Version, Body: doc.Body, At: x.clock.Now()})
	return true
}

// Put implements Index.
func (x *MemIndex) Put(ctx context.Context, doc co.Doc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.write(doc)
	return nil
}

// Upsert implements Index.
func (x *MemIndex) Upsert(ctx context.Context, doc co.Doc) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if cur, ok := x.docs[doc.ID]; ok && cur.Version >= doc.Version {
		return false, nil
	}
	return x.write(doc), nil
}

// Get implements Index.
func (x *MemIndex) Get(ctx context.Context, id string) (co.Doc, bool, error) {
	if err := ctx.Err(); err != nil {
		return co.Doc{}, false, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	d, ok := x.docs[id]
	return d, ok, nil
}

// Docs returns a copy of every stored document.
func (x *MemIndex) Docs() map[string]co.Doc {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make(map[string]co.Doc, len(x.docs))
	for k, v := range x.docs {
		out[k] = v
	}
	return out
}

// Effects returns a copy of the effect log.
func (x *MemIndex) Effects() []Effect {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]Effect(nil), x.log...)
}
