package consumer

import (
	"context"
	"fmt"
	"sync"
)

// faultKind is how a kit sink call fails (seed 002, 一: 回包丢失又会让调用方对已发生的成功保持未知).
type faultKind string

const (
	faultError   faultKind = "error"   // the call fails before it takes effect
	faultTimeout faultKind = "timeout" // the call takes effect, then its answer is lost: a deadline error
)

// fault arms one failing sink call: the first effect call of scope for
// event fails as kind.
type fault struct {
	event string
	scope string
	kind  faultKind
	fired bool
}

// injected is the error a failing sink call returns.
func injected(kind faultKind, scope string) error {
	if kind == faultTimeout {
		return fmt.Errorf("onceproof: no answer from %s within its deadline (the kit lost the answer; the call took effect): %w",
			scope, context.DeadlineExceeded)
	}
	return fmt.Errorf("onceproof: %s unavailable (the kit failed this call; it did not take effect)", scope)
}

// injectFault arms f.
func (h *harness) injectFault(f fault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults = append(h.faults, &f)
	h.rec.Note("kit", "arm failure", f.event, string(f.kind)+" "+f.scope)
}

// takeFault consumes the first unfired fault for (event, scope).
func (h *harness) takeFault(event, scope string) (faultKind, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range h.faults {
		if !f.fired && f.event == event && f.scope == scope {
			f.fired = true
			h.faultsFired++
			return f.kind, true
		}
	}
	return "", false
}

// uncertain tracks, for one delivery, the scopes whose effect call failed
// and that the consumer has not called again since (a retry, or a query
// that settles the doubt). Acking with one left is acking a failed effect.
type uncertain struct {
	mu     sync.Mutex
	scopes map[string]bool
}

func (u *uncertain) failed(scope string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.scopes == nil {
		u.scopes = map[string]bool{}
	}
	u.scopes[scope] = true
}

func (u *uncertain) resolved(scope string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.scopes, scope)
}

func (u *uncertain) left() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for s := range u.scopes {
		out = append(out, s)
	}
	return out
}

// faulted reports whether any call of the delivery failed by the kit.
func (u *uncertain) faulted() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.scopes != nil
}
