package consumer

import (
	"context"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
)

func registerHorizon(s *spec.Set, t Target) {
	s.It("CO-3.1", func(ctx context.Context, ev *verdict.Evidence) {
		r := newRun(newHarness(ctx, t, "CO-3.1", ev, workers))
		e := co.NewEvent("m-9", 1)
		r.step(Step{Kind: StepNew, Event: e})
		r.expectModel("the first handling of " + e.EventID)
		handled := r.clock.Elapsed()
		horizon := r.tm.RedeliveryHorizon
		life := t.Declared.DedupeLifetime
		if life > 0 {
			ev.Figure("declared de-dupe record lifetime", life.String(), "seed time")
		} else {
			ev.Figure("declared de-dupe record lifetime", "forever", "")
		}
		ev.Figure("redelivery at", horizon.String(), "seed time after the first handling")
		ev.Figure("real wait for the horizon", r.clock.Real(horizon).String(), "")
		if life > 0 && life < horizon {
			ev.Hazard("the declared de-dupe record lifetime %s is shorter than the redelivery horizon %s", life, horizon)
		}
		// The seed's t=11 redelivery by a recovery process, on the scaled clock.
		if err := r.clock.SleepUntil(ctx, handled+horizon); err != nil {
			spec.Unknown("the rule's deadline came before the redelivery horizon: %v", err)
		}
		r.rec.Note("kit", "clock", e.EventID, "t="+r.clock.Elapsed().Round(1e9).String()+" (seed time)")
		r.step(Step{Kind: StepReplay, Event: e})
		r.expectModel("a redelivery of " + e.EventID + " " + horizon.String() + " after it was handled (declared record lifetime " + lifeString(life) + ")")
		ev.Notef("the redelivery %s after the first handling made no second effect", horizon)
	})
}

func lifeString(d interface{ String() string }) string {
	if s := d.String(); s != "0s" {
		return s
	}
	return "forever"
}
