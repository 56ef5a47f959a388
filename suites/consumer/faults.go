package consumer

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/onsi/gomega"
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
func (w *world) injectFault(f fault) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.faults = append(w.faults, &f)
	w.rec.Note("kit", "arm failure", f.event, string(f.kind)+" "+f.scope)
}

// takeFault consumes the first unfired fault for (event, scope); with
// none, the rule's flaky plan, if it has one, decides (callfaults.go).
func (w *world) takeFault(event, scope string) (faultKind, bool) {
	w.mu.Lock()
	for _, f := range w.faults {
		if !f.fired && f.event == event && f.scope == scope {
			f.fired = true
			w.faultsFired++
			w.mu.Unlock()
			return f.kind, true
		}
	}
	w.mu.Unlock()
	return w.takeCallFault(event, scope)
}

// faultCount is how many sink calls the kit failed so far.
func (w *world) faultCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.faultsFired
}

// ackedAfterFailure records an ack of a delivery whose effect call failed
// and was not called again.
func (w *world) ackedAfterFailure(actor, brokerID string, scopes []string) {
	msg := fmt.Sprintf("%s acked %s after its %s call failed, without calling it again", actor, brokerID, strings.Join(scopes, ", "))
	w.rec.Note(actor, "ack after failure", brokerID, msg)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ackedFailed = append(w.ackedFailed, msg)
}

// expectAckedOnlyAfterEffects fails the rule if a delivery was acked while
// an effect call of it had failed and was not called again.
func (w *world) expectAckedOnlyAfterEffects() {
	w.mu.Lock()
	acked := append([]string(nil), w.ackedFailed...)
	w.mu.Unlock()
	if len(acked) == 0 {
		return
	}
	w.ev.Record(w.rec.Ops())
	for _, a := range acked {
		w.ev.Notef("acked with a failed effect: %s", a)
	}
	more := ""
	if len(acked) > 1 {
		more = fmt.Sprintf(" (and %d more)", len(acked)-1)
	}
	// The first only: a verdict's first line stays short; the notes hold the rest.
	w.r.Expect(acked).To(gomega.BeEmpty(), "a delivery whose effect failed was acked: %s%s", acked[0], more)
}

// calls is what one delivery called, in order (the trace CO-2.5 crashes
// along), and which of its effect calls failed and were not called again
// (a retry, or a query that settles the doubt): acking with one left is
// acking a failed effect.
type calls struct {
	mu     sync.Mutex
	labels []string
	doubt  map[string]bool // scopes
	// storeFailed: the kit failed a de-dupe store call of the delivery, so
	// an error from Handle is the right answer, not the consumer's own.
	storeFailed bool
}

// failedStore notes that the kit failed a store call of the delivery.
func (c *calls) failedStore() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.storeFailed = true
}

// count adds one call to the trace and returns its number.
func (c *calls) count(label string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.labels = append(c.labels, label)
	return len(c.labels)
}

func (c *calls) trace() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.labels...)
}

// effect notes whether the scope's effect call failed, or the consumer
// called the scope again (which settles an earlier failure).
func (c *calls) effect(scope string, failed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case failed && c.doubt == nil:
		c.doubt = map[string]bool{scope: true} // faulted from now on
	case failed:
		c.doubt[scope] = true
	default:
		delete(c.doubt, scope)
	}
}

// left is the scopes still in doubt.
func (c *calls) left() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for s := range c.doubt {
		out = append(out, s)
	}
	return out
}

// faulted reports whether any call of the delivery failed by the kit.
func (c *calls) faulted() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.doubt != nil || c.storeFailed
}

// firstDelivery keeps the calls of the first delivery of each event.
func (w *world) firstDelivery(event string, c *calls) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.first[event]; !ok {
		w.first[event] = c
	}
}

// trace is what the first delivery of event called, in order.
func (w *world) trace(event string) []string {
	w.mu.Lock()
	c := w.first[event]
	w.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.trace()
}

// Acks that fail as brokers' acks do: an error while the instance lives
// (the request never reached the broker, which redelivers after its ack
// wait), or a timeout after the broker took it (it will not redeliver).
// Either way the effects are done and must stay done: a consumer that
// undoes them, or forgets its records, repeats or loses an effect.

// failAck makes the next ack of event fail as kind.
func (w *world) failAck(event string, kind faultKind) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ackFaults == nil {
		w.ackFaults = map[string]faultKind{}
	}
	w.ackFaults[event] = kind
	w.rec.Note("kit", "arm ack failure", event, string(kind))
}

// takeAckFault consumes the ack failure armed for event, if any.
func (w *world) takeAckFault(event string) (faultKind, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k, ok := w.ackFaults[event]
	if ok {
		delete(w.ackFaults, event)
		w.acksFailed++
	}
	return k, ok
}

// ackError is what a failed ack returns.
func ackError(kind faultKind) error {
	if kind == faultTimeout {
		return fmt.Errorf("onceproof: the ack's answer did not come within its deadline (the kit lost it; the broker took the ack): %w", context.DeadlineExceeded)
	}
	return fmt.Errorf("onceproof: the ack failed (the kit failed it before it reached the broker, which will redeliver)")
}
