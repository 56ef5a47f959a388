// Package eskit holds what the kit's own event stores share and no outside
// store needs (an author writes these few lines as suits the store): the
// handle's closed flag, the shape checks that make a malformed call an
// argument error before storage is touched, and a version bound for Load.
package eskit

import (
	"context"
	"sync/atomic"

	"github.com/onceproof/tck/es"
)

// Handle is the part every store handle shares: a closed flag, atomic rather
// than a mutex so that a handle never serializes its callers (a shared lock
// in the handle would hide a store's own races from the ES-2 rules).
// Embed it; its Close satisfies es.EventStore.Close.
type Handle struct{ closed atomic.Bool }

// Usable is the check every call makes first: a closed handle fails with
// es.ErrClosed, a done context with its error. Neither is a conflict.
func (h *Handle) Usable(ctx context.Context) error {
	if h.closed.Load() {
		return es.ErrClosed
	}
	return ctx.Err()
}

// Close marks the handle closed; later calls fail with ErrClosed.
func (h *Handle) Close() error {
	h.closed.Store(true)
	return nil
}
