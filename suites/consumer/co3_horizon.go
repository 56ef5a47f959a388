package consumer

import (
	"fmt"
	"time"

	"github.com/onceproof/tck/internal/spec"
)

// registerHorizon registers CO-3.1: a redelivery at the seed's t=11, after
// a de-dupe record that lives less may be gone.
func registerHorizon(s *spec.Set, t Target) {
	s.It("CO-3.1", func(r *spec.R) {
		if t.Service != nil {
			r.NotApplicable("a consumer service is a black box running on its own clock: the kit cannot run its de-dupe record lifetime faster, and a redelivery %s after the first handling would take %s of real time", t.Timing.RedeliveryHorizon, t.Timing.RedeliveryHorizon)
		}
		h := openInproc(r, t, openOpts{midnight: true})
		e := h.event("m-9", 1)
		h.play(step{kind: stepNew, event: e})
		h.expectModel("the first handling of " + e.EventID)
		handled, handledAt := h.clock.Elapsed(), h.now.Now()
		horizon := h.tm.RedeliveryHorizon
		life := t.Declared.DedupeLifetime
		if life > 0 {
			r.Ev.Figure("declared de-dupe record lifetime", life.String(), "seed time")
		} else {
			r.Ev.Figure("declared de-dupe record lifetime", "forever", "")
		}
		r.Ev.Figure("redelivery at", horizon.String(), "seed time after the first handling")
		r.Ev.Figure("real wait for the horizon", h.clock.Real(horizon).String(), "")
		if life > 0 && life < horizon {
			r.Ev.Hazard("the declared de-dupe record lifetime %s is shorter than the redelivery horizon %s", life, horizon)
		}
		// The seed's t=11 redelivery by a recovery process, on the scaled clock.
		if err := h.clock.SleepUntil(r.Context(), handled+horizon); err != nil {
			r.Unknown("the rule's deadline came before the redelivery horizon: %v", err)
		}
		h.rec.Note("kit", "clock", e.EventID, "t="+h.clock.Elapsed().Round(time.Second).String()+" (seed time)")
		if came := h.clock.Elapsed() - handled; life >= horizon && came > life {
			// The kit was late (its process paused, on a clock 1200 times
			// faster): a record that outlives the horizon may rightly be
			// gone by the time the redelivery came.
			r.Excuse(func(failure string) string {
				return fmt.Sprintf("the redelivery due %s after the first handling came %s after it, past the declared record lifetime %s (the kit was %s late in real time): %s",
					horizon, came.Round(time.Second), life, h.clock.Real(came-horizon).Round(time.Millisecond), failure)
			})
		}
		r.Ev.Figure("calendar boundary between the handling and the redelivery", h.crossed(handledAt, h.now.Now()),
			fmt.Sprintf("%s boundary at %s on the consumer's clock", h.edge.Class, h.edge.At.Format(time.RFC3339)))
		h.play(step{kind: stepReplay, event: e})
		h.expectModel("a redelivery of " + e.EventID + " " + horizon.String() + " after it was handled (declared record lifetime " + lifeString(life) + ")")
		r.Ev.Notef("the redelivery %s after the first handling made no second effect", horizon)
	})
}

func lifeString(d time.Duration) string {
	if d > 0 {
		return d.String()
	}
	return "forever"
}
