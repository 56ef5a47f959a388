package consumer

import (
	"fmt"
	"slices"
	"time"

	"github.com/onceproof/tck/internal/stall"
)

// A consumer may do an effect after its ack when it made the effect durable
// first (an outbox, a task queue, a local log that a worker of its own
// drains): the ack says "it will happen", not "it happened". So the kit
// judges effects when they settle, not at the ack: before it compares the
// sinks with the model it waits for them to match, or for the consumer to
// be quiet (no delivery pending, no call through the kit) for a period
// scaled to the longest delay from an event's ack to an effect of it seen
// so far. An effect missing after that, of an acked message with nothing
// in flight, is lost; one missing while the consumer was still busy when
// the wait ran out is not decided.
const (
	quietFloor  = 2 * time.Second  // the quiet period before any late effect was seen
	quietFactor = 4                // times the longest ack-to-effect delay seen
	quietCap    = 15 * time.Second // the quiet period at most
	// awaitCap bounds one wait for effects (the rule's deadline may end it
	// sooner): a consumer busy past it leaves its missing effects undecided.
	awaitCap = 30 * time.Second
	// paceFactor: a declared Target.Pace makes the quiet period at least
	// this many times the pace.
	paceFactor = 4
)

// sawCall notes a call the kit saw the consumer make (a sink call, an ack)
// or a delivery it made: activity, which ends quiescence.
func (w *world) sawCall() { w.lastCall.Store(time.Now().UnixNano()) }

// sawEffect notes an effect call for event: if a message of the event was
// acked before it, the effect came after the ack, and its delay sizes the
// quiet period.
func (w *world) sawEffect(event string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.ackedAt[event]
	if !ok {
		return
	}
	w.lateEffects++
	w.lag = max(w.lag, time.Since(at))
}

// quietPeriod is how long the consumer must be quiet before a missing
// effect is judged lost.
func (w *world) quietPeriod() time.Duration {
	w.mu.Lock()
	lag := w.lag
	w.mu.Unlock()
	q := max(quietFloor, quietFactor*lag, paceFactor*w.t.Pace)
	return min(q, max(quietCap, paceFactor*w.t.Pace))
}

// awaitEffects waits until the sinks match the model for the messages in
// only (every message when only is nil), or until the consumer was quiet
// for the quiet period. It reports whether it ended so (false: the wait ran
// out, or the rule's deadline came, while the consumer was still busy).
//
// A difference no wait can mend (an effect twice, one the model does not
// expect) ends the wait at once, with false: it fails the rule whether or
// not the consumer is quiet, and waiting for every later step would only
// run the rule into its deadline.
func (w *world) awaitEffects(only map[string]bool) bool {
	if settledDiffs(w.diffOf(only)) {
		return len(w.diffOf(only)) == 0
	}
	q := w.quietPeriod()
	start := time.Now()
	for {
		sleep(w.ctx, w.words.poll*5)
		diffs := w.diffOf(only)
		if len(diffs) == 0 {
			return true
		}
		if settledDiffs(diffs) {
			return false
		}
		if w.ctx.Err() != nil {
			return false
		}
		last := time.Unix(0, w.lastCall.Load())
		if w.settled() && stall.Scheduled(last, time.Now()) >= q {
			w.noteQuiet(q)
			return true
		}
		if stall.Scheduled(start, time.Now()) > max(awaitCap, 2*q) {
			w.ev.Notef("the consumer was still busy %s after the step was acked (its last call %s ago): its effects were not awaited to the end",
				time.Since(start).Round(time.Millisecond), time.Since(last).Round(time.Millisecond))
			return false
		}
	}
}

// noteQuiet records that the kit judged after a quiet period.
func (w *world) noteQuiet(q time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.quietWaits++
	w.quietUsed = max(w.quietUsed, q)
}

// diffOf is the model's differences for the messages in only (all: nil).
func (w *world) diffOf(only map[string]bool) []difference {
	diffs := w.diff()
	if only == nil {
		return diffs
	}
	out := diffs[:0]
	for _, d := range diffs {
		if only[d.MessageID] {
			out = append(out, d)
		}
	}
	return out
}

// settledDiffs says whether waiting cannot change the verdict: no
// difference, or one that is not an effect on its way.
func settledDiffs(diffs []difference) bool {
	return len(diffs) == 0 || slices.ContainsFunc(diffs, func(d difference) bool { return !d.pendingKind() })
}

// pendingKind says whether a difference may still be an effect on its
// way (missing, or an index still at an older version) rather than one
// that happened wrongly (twice, unexpected, another body).
func (d difference) pendingKind() bool {
	switch d.what() {
	case "effect lost", "missing document", "stale version won":
		return true
	}
	return false
}

// figureLateEffects puts the late effects in the evidence (under w.mu).
func (w *world) figureLateEffects() {
	if w.lateEffects > 0 {
		w.ev.Figure("effects after their ack", w.lateEffects,
			fmt.Sprintf("effect calls that came after a message of their event was acked; the longest delay %s", w.lag.Round(time.Millisecond)))
	}
	if w.quietWaits > 0 {
		w.ev.Figure("quiet waits before judging", w.quietWaits,
			fmt.Sprintf("the sinks differed from the model until the consumer had been quiet for %s (no delivery pending, no call)", w.quietUsed.Round(time.Millisecond)))
	}
}
