package consumer

import (
	"fmt"
	"time"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/spec"
)

// registerScopes registers CO-1.*: one effect per (message, version, scope)
// across redeliveries, edits, scopes, stale replays and two workers.
func registerScopes(s *spec.Set, t Target) {
	s.It("CO-1.1", func(r *spec.R) {
		h := open(r, t)
		e := h.event("m-9", 1)
		// The broker's own redelivery: the kit loses the first ack.
		h.play(step{kind: stepNew, event: e, loseAck: true})
		n := h.attempts(e.EventID)
		r.Ev.Figure("deliveries of "+e.EventID, n, "")
		if n < 2 {
			r.Unknown("the broker did not redeliver %s after its ack was lost (%d deliveries)", e.EventID, n)
		}
		h.expectModel("a broker redelivery of " + e.EventID + " (its first ack was lost)")
		// A replay of the same event id, after it was acked.
		h.play(step{kind: stepReplay, event: e})
		h.expectModel("a replay of " + e.EventID + " after it was acked")
		r.Ev.Notef("%s delivered %d times by the broker and replayed once: one effect per declared scope", e.EventID, n)
	})

	s.It("CO-1.2", func(r *spec.R) {
		h := open(r, t)
		v1, v2 := h.event("m-9", 1), h.event("m-9", 2)
		h.play(step{kind: stepNew, event: v1})
		h.play(step{kind: stepNew, event: v2})
		h.expectModel("the edit " + v2.EventID + " after " + v1.EventID)
		r.Ev.Notef("the edit %s was processed in every declared scope", v2.EventID)
	})

	s.It("CO-1.3", func(r *spec.R) {
		h := open(r, t)
		plain := h.event("m-a", 1)
		h.play(step{kind: stepNew, event: plain})
		h.expectModel("both scopes for " + plain.EventID)
		// One scope finished, the instance ends before the other: the
		// finished scope must not stand for the other on redelivery.
		for _, c := range []struct{ m, scope string }{{"m-b", co.ScopeIndex}, {"m-c", co.ScopeNotify}} {
			e := h.event(c.m, 1)
			h.play(step{kind: stepNew, event: e, crash: &tripwire{point: afterEffect, event: e.EventID, scope: c.scope}})
			h.expectModel(fmt.Sprintf("%s with a crash right after its %s effect", e.EventID, c.scope))
		}
		r.Ev.Notef("each scope took effect exactly once, also when the instance ended between the two")
	})

	s.It("CO-1.4", func(r *spec.R) {
		h := open(r, t)
		v1, v2 := h.event("m-9", 1), h.event("m-9", 2)
		h.play(step{kind: stepNew, event: v1})
		h.play(step{kind: stepNew, event: v2})
		h.play(step{kind: stepReplay, event: v1})
		h.expectModel("a stale replay of " + v1.EventID + " after " + v2.EventID)
		r.Ev.Notef("the stale replay of %s left the index at %s and made no effect", v1.EventID, v2.EventID)
	})

	s.It("CO-1.5", func(r *spec.R) {
		h := open(r, t)
		h.requireTwoAtOnce()
		trials, raced := raceTrials(h, func(n int) string {
			e := h.event(fmt.Sprintf("m-race-%d", n), 1)
			h.play(step{kind: stepTwin, event: e})
			return e.EventID
		})
		r.Ev.Figure("trials", trials, "")
		r.Ev.Figure("trials where both workers held the event at once", raced, "")
		h.expectModel("one event delivered to two workers at the same moment")
		if raced == 0 {
			r.Unknown("no trial had both workers hold the event at once (%d trials); nothing was checked", trials)
		}
		r.Ev.Notef("no violation in %d barrier-started trials (%d raced)", trials, raced)
	})

	s.It("CO-1.6", func(r *spec.R) {
		h := open(r, t)
		v1, v2, v3 := h.event("m-9", 1), h.event("m-9", 2), h.event("m-9", 3)
		// The edit v2 reaches the consumer first; v1, never seen before,
		// arrives after it (a nak delay or a redelivery after the ack wait
		// does that on a real broker), and its first ack is lost so it comes
		// twice. Then v3, and v2 arriving late again as a replay.
		h.play(step{kind: stepNew, event: v2})
		h.play(step{kind: stepNew, event: v1, loseAck: true})
		h.expectModel("the first delivery of " + v1.EventID + " after " + v2.EventID)
		h.play(step{kind: stepNew, event: v3})
		h.play(step{kind: stepReplay, event: v2})
		h.expectModel("a late copy of " + v2.EventID + " after " + v3.EventID)
		r.Ev.Notef("older versions first delivered after newer ones never won the index, and every declared scope took effect once per version")
	})

	s.It("CO-1.7", func(r *spec.R) {
		h := open(r, t)
		h.requireTwoAtOnce()
		trials, raced := raceTrials(h, func(n int) string {
			m := fmt.Sprintf("m-pair-%d", n)
			// Every third trial carries a second copy of both versions.
			h.play(step{kind: stepPair, event: h.event(m, 2), older: h.event(m, 1), dup: n%3 == 0})
			return h.event(m, 2).EventID
		})
		r.Ev.Figure("trials", trials, "")
		r.Ev.Figure("trials where the two versions were handled at once", raced, "")
		h.expectModel("two versions of one message handled by two workers at the same moment")
		if raced == 0 {
			r.Unknown("no trial had both workers hold a version at once (%d trials); nothing was checked", trials)
		}
		r.Ev.Notef("no violation in %d barrier-started trials of two versions at once (%d raced): the newer version won each time", trials, raced)
	})
}

// raceTrials plays two-worker trials (play plays trial n and names the event
// both workers were to hold) until one breaks the model, 12 ran, or 4 s
// passed. It returns the trials run and how many really overlapped.
func raceTrials(h *world, play func(n int) string) (trials, raced int) {
	const maxTrials, budget = 12, 4 * time.Second
	began := time.Now()
	for trials < maxTrials && time.Since(began) < budget {
		trials++
		if h.raced(play(trials)) {
			raced++
		}
		if len(h.diff()) > 0 {
			break
		}
	}
	return trials, raced
}
