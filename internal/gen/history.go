package gen

import (
	"sync"
	"time"
)

// Call is one operation as observed: who made it, what it asked and got,
// and when it was called and returned (offsets from the history's start).
type Call[I, O any] struct {
	Client int
	Input  I
	Output O
	Call   time.Duration
	Return time.Duration
}

// History records calls; it is safe for concurrent use.
type History[I, O any] struct {
	mu    sync.Mutex
	start time.Time
	calls []Call[I, O]
}

// NewHistory starts a history; offsets count from now.
func NewHistory[I, O any]() *History[I, O] { return &History[I, O]{start: time.Now()} }

// Begin records the call time of an operation; the returned function records
// its output and return time. The call is in the history once it returned.
func (h *History[I, O]) Begin(client int, in I) func(out O) {
	called := time.Since(h.start)
	return func(out O) {
		returned := time.Since(h.start)
		h.mu.Lock()
		defer h.mu.Unlock()
		h.calls = append(h.calls, Call[I, O]{Client: client, Input: in, Output: out, Call: called, Return: returned})
	}
}

// Calls returns a copy of the returned calls, in order of return.
func (h *History[I, O]) Calls() []Call[I, O] {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Call[I, O](nil), h.calls...)
}
