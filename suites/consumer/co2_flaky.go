package consumer

import (
	"fmt"
	"strings"

	"github.com/onceproof/tck/co"

	"github.com/onceproof/tck/internal/spec"
)

// flakyEvents is how many events CO-2.7 hands at the rates drawn from its
// seed, after its structural cases.
const flakyEvents = 6

// registerFlakyCalls registers CO-2.7: every call of the consumer that goes
// through the kit can fail, the later ones as much as the first (issue 37).
func registerFlakyCalls(s *spec.Set, t Target) {
	s.It("CO-2.7", func(r *spec.R) {
		h := open(r, t)
		h.flaky()
		reached := 0
		// Failures in a row: the first maxFailRun effect calls of a scope
		// fail with an error. A consumer that gives up after fewer (acks,
		// or marks the effect done) loses the effect.
		for i, scope := range t.Declared.Scopes {
			e := h.event(fmt.Sprintf("m-run-%d", i+1), 1)
			h.forceFailures(e.EventID, scope, maxFailRun)
			h.play(step{kind: stepNew, event: e})
			if h.failedCount(e.EventID, false) == 0 {
				r.Ev.Notef("case %d failures in a row of %s: the consumer made no %s call for %s", maxFailRun, scope, scope, e.EventID)
				continue
			}
			reached++
			r.Ev.Figure(fmt.Sprintf("deliveries of %s (%d %s failures in a row)", e.EventID, maxFailRun, scope), h.attempts(e.EventID), "")
			h.expectAckedOnlyAfterEffects()
			h.expectModel(h.failedWhy(e))
		}
		// A failed de-dupe read at a redelivery: a handled event comes
		// back, and the consumer's next store reads fail. One that takes
		// the error for "no record" does the effect again.
		e := h.event("m-reread", 1)
		h.play(step{kind: stepNew, event: e})
		h.expectModel("the clean handling of " + e.EventID)
		h.forceFailures(e.EventID, "store get", maxFailRun)
		h.play(step{kind: stepReplay, event: e})
		storeReached := h.failedCount(e.EventID, true) > 0
		if storeReached {
			reached++
			h.expectModel(h.failedWhy(e))
		} else {
			h.expectModel("a replay of " + e.EventID)
			r.Ev.Notef("case failed de-dupe reads at a replay: the consumer read no de-dupe record through the kit's store (env.Store) while handling the replay of %s; a store of its own is out of the kit's reach", e.EventID)
		}
		// At the rates drawn from the seed: any call of these events, a
		// first version, an edit and replays, the de-dupe store's too.
		for i := 1; i <= flakyEvents; i++ {
			base := fmt.Sprintf("m-flaky-%d", i)
			v1 := h.event(base, 1)
			h.armFlaky(v1.EventID)
			h.play(step{kind: stepNew, event: v1})
			last := v1
			if i%2 == 0 {
				v2 := h.event(base, 2)
				h.armFlaky(v2.EventID)
				h.play(step{kind: stepNew, event: v2})
				last = v2
			}
			h.play(step{kind: stepReplay, event: v1})
			if last != v1 {
				h.play(step{kind: stepReplay, event: last})
			}
			h.expectAckedOnlyAfterEffects()
			if last != v1 {
				h.expectModel(h.failedWhy(v1, last))
			} else {
				h.expectModel(h.failedWhy(v1))
			}
		}
		sink, store := h.flakyTotals()
		if sink+store == 0 && reached == 0 {
			r.Unknown("the consumer made no call the kit could fail: no effect call and no de-dupe store call went through the kit")
		}
		r.Ev.Figure("effect calls failed", sink, "at the rates drawn from the seed, later calls as much as the first")
		storeNote := "at the rates drawn from the seed; the kit fails only the de-dupe store it hands the consumer (env.Store, in process)"
		if store == 0 {
			storeNote = "none: the consumer made no de-dupe store call through the kit (a store of its own, or a service's, is out of the kit's reach)"
		}
		r.Ev.Figure("de-dupe store calls failed", store, storeNote)
		also := " and de-dupe store calls failing too"
		if store == 0 {
			also = " (no de-dupe store call went through the kit: its store is out of reach)"
		}
		r.Ev.Notef("with effect calls failing up to %d times in a row%s, no delivery was acked with a failed effect and every effect counted exactly once", maxFailRun, also)
	})
}

// failedWhy names what the kit failed of the calls of events (versions of
// one message): the judgement's reason, the first failed call and a count
// of the rest, so a verdict's first line (completed by the difference's
// (message, version, scope)) stays under 200 characters with a 16-digit
// version; the evidence's notes list every failure.
func (w *world) failedWhy(events ...co.Event) string {
	var shown []string
	total := 0
	for _, e := range events {
		l := w.failedCalls(e.EventID)
		if len(l) == 0 {
			continue
		}
		w.ev.Notef("calls of %s the kit failed: %s", e.EventID, strings.Join(l, ", "))
		total += len(l)
		for _, c := range l {
			if len(shown) == 1 {
				break
			}
			if len(events) > 1 {
				c = fmt.Sprintf("v%d %s", e.Version, c)
			}
			shown = append(shown, c)
		}
	}
	who := events[0].EventID
	if len(events) > 1 {
		who = events[0].MessageID
	}
	if total == 0 {
		return who + ", no call of it failed"
	}
	more := ""
	if total > len(shown) {
		more = fmt.Sprintf(" (+%d)", total-len(shown))
	}
	return fmt.Sprintf("%s after the kit failed %s%s", who, strings.Join(shown, ", "), more)
}
