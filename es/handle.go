package es

import (
	"context"
	"sync/atomic"
)

// Handle is the part every store handle shares: a closed flag, atomic rather
// than a mutex so that a handle never serializes its callers (a shared lock
// in the handle would hide a store's own races from the ES-2 rules).
// Embed it; its Close satisfies EventStore.Close.
type Handle struct{ closed atomic.Bool }

// Usable is the check every call makes first: a closed handle fails with
// ErrClosed, a done context with its error. Neither is a conflict.
func (h *Handle) Usable(ctx context.Context) error {
	if h.closed.Load() {
		return ErrClosed
	}
	return ctx.Err()
}

// Close marks the handle closed; later calls fail with ErrClosed.
func (h *Handle) Close() error {
	h.closed.Store(true)
	return nil
}
