package consumer

import (
	"fmt"
	"strings"
	"time"
)

// settled reports whether every published message is acked and the
// transport has nothing in flight.
func (w *world) settled() bool {
	return !w.anyPending() && w.tr.quiet()
}

// settle waits until the step is settled. The bound (Timing.Settle, or more
// for a consumer whose acks are slow: settleBound; in the kit's scheduled
// time: a paused kit is not an unacking consumer) counts
// from the last ack, so a slow consumer that keeps acking is waited for up
// to the rule's deadline. If the step does not settle, the rule ends: fail
// only on positive evidence the transport holds (a consumer that panicked,
// returned errors or exited); else unknown naming what was not acked. A
// message not acked within a bound is, by itself, a slow consumer or a
// starved host as much as a lost message.
func (w *world) settle() {
	var bound time.Duration
	for {
		acks := w.ackCount()
		bound = w.settleBound()
		if attentive(w.ctx, bound, w.words.poll, func() bool { return w.settled() || w.ackCount() != acks }) {
			if w.settled() {
				return
			}
			continue // an ack came: the consumer is progressing, wait again
		}
		if w.tr.handling() && w.ctx.Err() == nil {
			// A Handle has not returned: the consumer is working or
			// waiting on its own lock (a SQLite busy timeout of 10 s),
			// not idle; the rule's deadline bounds the wait.
			continue
		}
		break
	}
	var waiting []string
	for _, st := range w.pending() {
		waiting = append(waiting, fmt.Sprintf("%s (%d deliveries)", st.brokerID, st.attempts))
	}
	w.ev.Figure("unsettled messages", len(waiting), "")
	w.ev.Notef("not acked after %s without an ack: %s", bound, strings.Join(waiting, ", "))
	w.ev.Record(w.rec.Ops())
	if w.ctx.Err() != nil {
		w.r.Unknown("the rule's deadline came while %d message(s) were not yet acked (%s): the step was not reached to its end, which says nothing of the %s",
			len(waiting), clip(waiting, 5), w.words.who)
	}
	w.tr.unsettled(waiting)
	w.r.Unknown("the %s did not ack %s within %s after its last ack, and neither panicked, returned an error nor exited: not acking within a bound is no evidence of a lost message (a slow consumer, a starved host)",
		w.words.who, clip(waiting, 5), bound)
}

// settleBound is how long settle waits for the next ack: Timing.Settle, or
// four times the slowest delivery-to-ack this rule saw, if longer: a
// consumer whose acks take seconds on a loaded host (its own SQLite file,
// a task queue) is paced by itself, not by the kit's fast references. It
// is never shorter than the broker's ack wait and Timing.Settle after it:
// a delivery whose ack a crash or the kit took comes again only after the
// ack wait, and is then handled at the consumer's pace.
func (w *world) settleBound() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return max(w.words.settle, 4*w.slowestAck, w.words.redeliver+w.words.settle)
}

// clip joins the first n of xs and says how many more there are.
func clip(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(xs[:n], ", "), len(xs)-n)
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
