package consumer

import (
	"fmt"
	"strings"
	"time"

	"github.com/onsi/gomega"
)

// settled reports whether every published message is acked and the
// transport has nothing in flight.
func (w *world) settled() bool {
	return !w.anyPending() && w.tr.quiet()
}

// settle waits until the step is settled. If that does not happen within
// the transport's bound, the rule ends: the transport says why when it
// knows (a consumer that blocked is unknown, one that panicked or exited
// fails), else the consumer fails with what it never acked.
func (w *world) settle() {
	// Not settling in time is judged below, by why; the bound counts the
	// kit's scheduled time (a paused kit is not an unacking consumer).
	if attentive(w.ctx, w.words.settle, w.words.poll, w.settled) {
		return
	}
	var waiting []string
	for _, st := range w.pending() {
		waiting = append(waiting, fmt.Sprintf("%s (%d deliveries)", st.brokerID, st.attempts))
	}
	w.ev.Figure("unsettled messages", len(waiting), "")
	w.ev.Notef("not acked after %s: %s", w.words.settle, strings.Join(waiting, ", "))
	w.ev.Record(w.rec.Ops())
	w.tr.unsettled(waiting)
	w.r.Expect(waiting).To(gomega.BeEmpty(), "the %s never acked %s within %s", w.words.who, strings.Join(waiting, ", "), w.words.settle)
}

// consumerErrs is a copy of the errors the kit did not cause.
func (w *world) consumerErrs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.errs...)
}

// gate holds the first n deliveries of its events until all n arrived (or
// a bound passed), then releases them together: two workers handling the
// same event (CO-1.5), or two versions of one message (CO-1.7), at the same
// moment.
type gate struct {
	n       int
	arrived int
	open    chan struct{}
	raced   bool
}

func (w *world) addGate(n int, events ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	g := &gate{n: n, open: make(chan struct{})}
	for _, e := range events {
		w.gates[e] = g
	}
}

// raced reports whether the gate of event held all its deliveries at once.
func (w *world) raced(event string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	g, ok := w.gates[event]
	return ok && g.raced
}

// waitGate holds a delivery of event until the gate's other delivery
// reached a worker too (or a second passed).
func (w *world) waitGate(event string) {
	w.mu.Lock()
	g, ok := w.gates[event]
	if !ok || g.arrived >= g.n {
		w.mu.Unlock()
		return
	}
	g.arrived++
	if g.arrived == g.n {
		g.raced = true
		close(g.open)
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-g.open:
	case <-t.C:
		// The other copy did not come: release alone, the trial does not count as raced.
		w.mu.Lock()
		if g.arrived < g.n {
			g.arrived = g.n
			close(g.open)
		}
		w.mu.Unlock()
	case <-w.ctx.Done():
	}
}
