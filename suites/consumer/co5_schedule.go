package consumer

import (
	"fmt"
	"hash/fnv"
	"math/rand"
	"time"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/spec"
)

func registerSchedule(s *spec.Set, t Target) {
	s.It("CO-5.1", func(r *spec.R) {
		seed := t.Seed
		if seed == 0 {
			seed = time.Now().UnixNano()
		}
		r.Ev.Figure("seed", seed, "")
		steps := schedule(seed, t.Events)
		kinds := map[stepKind]int{}
		events, crashes, lost := 0, 0, 0
		for _, st := range steps {
			kinds[st.kind]++
			events += st.publishes()
			if st.crash != nil {
				crashes++
			}
			if st.loseAck {
				lost++
			}
		}
		r.Ev.Figure("schedule digest", digest(steps), "")
		r.Ev.Figure("events published", events, "")
		r.Ev.Figure("new events (first versions and edits)", kinds[stepNew], "")
		r.Ev.Figure("replays (same event id, many stale)", kinds[stepReplay], "")
		r.Ev.Figure("twin deliveries to two workers", kinds[stepTwin], "")
		r.Ev.Figure("crashes armed", crashes, "")
		r.Ev.Figure("acks lost", lost, "")
		h := newHarness(r, t, workers)
		for _, st := range steps {
			if r.Context().Err() != nil {
				r.Unknown("the rule's deadline came during the schedule (seed %d)", seed)
			}
			h.play(st)
		}
		h.expectModel(fmt.Sprintf("the seeded schedule (seed %d; Target.Seed re-runs it)", seed))
		r.Ev.Notef("%d events (seed %d): every sink equals the model, every (message, version, scope) effect counted exactly once", events, seed)
	})
}

var crashPoints = []struct {
	p     point
	scope string
}{
	{beforeEffect, co.ScopeIndex}, {afterEffect, co.ScopeIndex},
	{beforeEffect, co.ScopeNotify}, {afterEffect, co.ScopeNotify},
	{beforeAck, ""}, {afterAck, ""},
}

// schedule generates a seeded schedule of at least events broker messages:
// first versions of new messages, edits (the next version), replays of
// handled events (many of them stale), twin copies, crashes at every point
// the kit controls, and lost acks. The same seed gives the same schedule.
func schedule(seed int64, events int) []step {
	rnd := rand.New(rand.NewSource(seed))
	var steps []step
	versions := map[string]int{}
	var msgs []string
	var handled []co.Event
	for n := 0; n < events; {
		var s step
		x := rnd.Float64()
		switch {
		case x < 0.18 && len(handled) > 0:
			s = step{kind: stepReplay, event: handled[rnd.Intn(len(handled))]}
		case x < 0.28:
			s = step{kind: stepTwin}
		default:
			s = step{kind: stepNew}
		}
		if s.kind != stepReplay {
			var m string
			if len(msgs) == 0 || rnd.Float64() < 0.4 {
				m = fmt.Sprintf("m-%d", len(msgs)+1)
				msgs = append(msgs, m)
			} else {
				m = msgs[rnd.Intn(len(msgs))]
			}
			versions[m]++
			s.event = co.NewEvent(m, versions[m])
			handled = append(handled, s.event)
		}
		if rnd.Float64() < 0.12 {
			cp := crashPoints[rnd.Intn(len(crashPoints))]
			s.crash = &plan{point: cp.p, event: s.event.EventID, scope: cp.scope}
		} else if rnd.Float64() < 0.06 {
			s.loseAck = true
		}
		steps = append(steps, s)
		n += s.publishes()
	}
	return steps
}

// digest fingerprints a schedule, so two runs' evidence shows they played
// the same one.
func digest(steps []step) string {
	f := fnv.New64a()
	for _, s := range steps {
		fmt.Fprintf(f, "%s %s %v", s.kind, s.event.EventID, s.loseAck)
		if s.crash != nil {
			fmt.Fprintf(f, " %s %s", s.crash.point, s.crash.scope)
		}
		fmt.Fprintln(f)
	}
	return fmt.Sprintf("%016x", f.Sum64())
}
