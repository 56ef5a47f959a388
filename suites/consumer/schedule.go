package consumer

import (
	"context"
	"time"

	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
)

func registerSchedule(s *spec.Set, t Target) {
	s.It("CO-5.1", func(ctx context.Context, ev *verdict.Evidence) {
		seed := t.Seed
		if seed == 0 {
			seed = time.Now().UnixNano()
		}
		ev.Figure("seed", seed, "")
		steps := Schedule(seed, t.Events)
		kinds := map[StepKind]int{}
		events, crashes, lost := 0, 0, 0
		for _, st := range steps {
			kinds[st.Kind]++
			events += st.Publishes()
			if st.Crash != nil {
				crashes++
			}
			if st.LoseAck {
				lost++
			}
		}
		ev.Figure("events published", events, "")
		ev.Figure("new events (first versions and edits)", kinds[StepNew], "")
		ev.Figure("replays (same event id, many stale)", kinds[StepReplay], "")
		ev.Figure("twin deliveries to two workers", kinds[StepTwin], "")
		ev.Figure("crashes armed", crashes, "")
		ev.Figure("acks lost", lost, "")
		r := newRun(newHarness(ctx, t, "CO-5.1", ev, workers))
		for _, st := range steps {
			if ctx.Err() != nil {
				spec.Unknown("the rule's deadline came during the schedule")
			}
			r.step(st)
		}
		r.expectModel("the seeded schedule (seed in the evidence)")
		ev.Notef("%d events (seed %d): every sink equals the model, every (message, version, scope) effect counted exactly once", events, seed)
	})
}
