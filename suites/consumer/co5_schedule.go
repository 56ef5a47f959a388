package consumer

import (
	"fmt"
	"hash/fnv"
	"math/rand"
	rand2 "math/rand/v2"
	"time"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/gen"
	"github.com/onceproof/tck/internal/spec"
)

func registerSchedule(s *spec.Set, t Target) {
	s.It("CO-5.1", func(r *spec.R) {
		h := open(r, t)
		seed := h.seed
		steps, edges := schedule(seed, t.Events, h.suffix())
		kinds := map[stepKind]int{}
		events, crashes, takeovers, lost, ackFaults := 0, 0, 0, 0, 0
		for _, st := range steps {
			kinds[st.kind]++
			events += st.publishes()
			if st.crash != nil {
				crashes++
			}
			if st.again {
				takeovers++
			}
			if st.loseAck {
				lost++
			}
			if st.ackFault != "" {
				ackFaults++
			}
		}
		// The digest is of the schedule without the run's message suffix, so
		// two runs of one seed show the same digest.
		plain, _ := schedule(seed, t.Events, "")
		r.Ev.Figure("schedule digest", digest(plain), "")
		r.Ev.Figure("message versions start at", edges.String(), "messages whose first version is just below a boundary of this class")
		r.Ev.Figure("events published", events, "")
		r.Ev.Figure("new events (first versions and edits)", kinds[stepNew], "")
		r.Ev.Figure("replays (same event id, many stale)", kinds[stepReplay], "")
		r.Ev.Figure("twin deliveries to two workers", kinds[stepTwin], "")
		r.Ev.Figure("versions of one message handled at once by two workers", kinds[stepPair], "pairs")
		r.Ev.Figure("late first deliveries (an older version first delivered after a newer one)", lateSteps(steps), "")
		r.Ev.Figure("crashes armed", crashes, "")
		r.Ev.Figure("take-overs crashed too", takeovers, "crashes armed twice: the redelivery that takes the dead instance's work over crashes at the same point")
		r.Ev.Figure("acks lost", lost, "")
		r.Ev.Figure("acks failed", ackFaults, "an error while the instance lives (the broker did not take it), or a timeout after the broker took it")
		r.Ev.Figure("schedule frequencies", frequencies(), "")
		if h.tr.killsAnywhere() {
			killAnywhere(r, steps)
		}
		for i, st := range steps {
			if r.Context().Err() != nil {
				r.Unknown("the rule's deadline came during the schedule (seed %d)", seed)
			}
			h.play(st)
			// Judged along the way too: a broken consumer fails at the first
			// checkpoint after its defect shows, with a shorter history.
			if n := i + 1; n%scheduleCheckpoint == 0 && n < len(steps) {
				h.expectModel(fmt.Sprintf("the seeded schedule (seed %d; Target.Seed re-runs it), after step %d of %d", seed, n, len(steps)))
			}
		}
		h.expectModel(fmt.Sprintf("the seeded schedule (seed %d; Target.Seed re-runs it)", seed))
		r.Ev.Notef("%d events (seed %d): every sink equals the model, every (message, version, scope) effect counted exactly once", events, seed)
	})
}

// scheduleCheckpoint is how many steps CO-5.1 plays between two
// comparisons of the sinks with the model.
const scheduleCheckpoint = 25

// pAnyKill is the chance that a step also kills a random worker at a
// random moment (0 to 40 ms after its publish), wherever it is: inside its
// own transaction, between two calls, idle. Only a transport that can end
// a worker anywhere (a service's process) does.
const pAnyKill = 0.05

// killAnywhere has some steps also kill a worker at a random moment. The
// moments have a seed of their own, from the time: the schedule's seed
// replays the schedule, not them.
func killAnywhere(r *spec.R, steps []step) {
	seed := time.Now().UnixNano()
	rnd := rand2.New(rand2.NewPCG(uint64(seed), 0))
	r.Ev.Figure("random kills", fmt.Sprintf("%.0f%% of the steps also kill a random replica 0-40 ms after the publish", 100*pAnyKill), "")
	r.Ev.Figure("random kill seed", seed, "the moments, not the schedule (the schedule's seed is \"seed\")")
	for i := range steps {
		if rnd.Float64() < pAnyKill {
			steps[i].kill = &anyKill{worker: rnd.IntN(1 << 16), after: time.Duration(rnd.IntN(40)) * time.Millisecond}
		}
	}
}

var crashPoints = []struct {
	p     point
	scope string
}{
	{beforeEffect, co.ScopeIndex}, {afterEffect, co.ScopeIndex},
	{beforeEffect, co.ScopeNotify}, {afterEffect, co.ScopeNotify},
	{beforeAck, ""}, {afterAck, ""}, {beforeCall, ""}, {afterCall, ""},
}

// The schedule's frequencies, stated in CO-5.1's evidence.
const (
	pReplay   = 0.18 // a step replays a handled event (many stale)
	pTwin     = 0.10 // a step publishes two copies of a new event for two workers
	pPair     = 0.08 // a step publishes two new versions of one message for two workers (half with a copy of each)
	pNewMsg   = 0.40 // a new event is the first version of a new message (else an edit)
	pLate     = 0.15 // an edit is withheld and first delivered 1 to 4 steps after the next version
	pCrash    = 0.12 // a step arms a crash
	pAgain    = 0.20 // a crash is armed twice: the take-over crashes too
	pLoseAck  = 0.06 // a step without a crash loses its first ack
	pAckFault = 0.06 // a step without a crash or lost ack fails its first ack (half an error, half a timeout)
)

func frequencies() string {
	return fmt.Sprintf("per step: replay %.0f%%, twin %.0f%%, version pair %.0f%%, else new; new: %.0f%% a new message, else an edit, "+
		"of which %.0f%% first delivered late (after the next version); crash %.0f%% (%.0f%% of them twice: the take-over too); "+
		"lost ack %.0f%% of the rest; failed ack %.0f%% of the rest",
		100*pReplay, 100*pTwin, 100*pPair, 100*pNewMsg, 100*pLate, 100*pCrash, 100*pAgain, 100*pLoseAck, 100*pAckFault)
}

// schedule generates a seeded schedule of at least events broker messages:
// first versions of new messages, edits (the next version), edits first
// delivered late (after the version that follows them), two versions of one
// message at once, replays of handled events (many of them stale), twin
// copies, crashes at every point the kit controls (some of them again in
// the take-over), lost acks and failed acks. Message ids end in suffix;
// each message's first version is drawn just below a boundary (versions.go)
// and the tally counts their classes. The same seed gives the same schedule.
func schedule(seed int64, events int, suffix string) ([]step, gen.Tally) {
	rnd := rand.New(rand.NewSource(seed))
	vsrc := gen.NewSource(seed)
	edges := gen.Tally{}
	var steps []step
	versions := map[string]int{}
	starts := map[string]int{}
	var msgs []string
	var handled []co.Event
	type withheld struct {
		due int
		e   co.Event
	}
	var late []withheld
	pick := func() string {
		if len(msgs) == 0 || rnd.Float64() < pNewMsg {
			m := fmt.Sprintf("m-%d%s", len(msgs)+1, suffix)
			g := gen.VersionEdge()
			if len(msgs)%2 == 0 {
				g = gen.DigitEdge() // half the messages cross into one more digit
			}
			e := gen.Draw(vsrc, g)
			starts[m] = int(e.Below)
			edges.Add(e.Class)
			msgs = append(msgs, m)
			return m
		}
		return msgs[rnd.Intn(len(msgs))]
	}
	next := func(m string) co.Event {
		versions[m]++
		return co.NewEvent(m, starts[m]+versions[m]-1)
	}
	for n := 0; n < events || len(late) > 0; {
		var s step
		if len(late) > 0 && (late[0].due <= len(steps) || n >= events) {
			// A withheld edit reaches the consumer for the first time, after a newer version.
			s = step{kind: stepNew, event: late[0].e}
			late = late[1:]
			handled = append(handled, s.event)
		} else {
			x := rnd.Float64()
			switch {
			case x < pReplay && len(handled) > 0:
				s = step{kind: stepReplay, event: handled[rnd.Intn(len(handled))]}
			case x < pReplay+pTwin:
				s = step{kind: stepTwin, event: next(pick())}
				handled = append(handled, s.event)
			case x < pReplay+pTwin+pPair:
				m := pick()
				older := next(m)
				s = step{kind: stepPair, older: older, event: next(m), dup: rnd.Float64() < 0.5}
				handled = append(handled, older, s.event)
			default:
				m := pick()
				e := next(m)
				if e.Version > starts[m] && rnd.Float64() < pLate {
					late = append(late, withheld{due: len(steps) + 1 + rnd.Intn(4), e: e})
					e = next(m)
				}
				s = step{kind: stepNew, event: e}
				handled = append(handled, s.event)
			}
		}
		if rnd.Float64() < pCrash {
			cp := crashPoints[rnd.Intn(len(crashPoints))]
			s.crash = &tripwire{point: cp.p, event: s.event.EventID, scope: cp.scope}
			if cp.p == beforeCall || cp.p == afterCall {
				s.crash.n = 1 + rnd.Intn(6)
			}
			s.again = rnd.Float64() < pAgain
		} else if rnd.Float64() < pLoseAck {
			s.loseAck = true
		} else if rnd.Float64() < pAckFault {
			s.ackFault = faultError
			if rnd.Float64() < 0.5 {
				s.ackFault = faultTimeout
			}
		}
		steps = append(steps, s)
		n += s.publishes()
	}
	return steps, edges
}

// late counts the steps that first deliver a version after a newer one of
// the same message was delivered.
func lateSteps(steps []step) int {
	newest := map[string]int{}
	n := 0
	for _, s := range steps {
		if s.kind == stepNew && s.event.Version < newest[s.event.MessageID] {
			n++
		}
		if s.event.Version > newest[s.event.MessageID] {
			newest[s.event.MessageID] = s.event.Version
		}
	}
	return n
}

// digest fingerprints a schedule, so two runs' evidence shows they played
// the same one.
func digest(steps []step) string {
	f := fnv.New64a()
	for _, s := range steps {
		fmt.Fprintf(f, "%s %s %s %v %v %s", s.kind, s.event.EventID, s.older.EventID, s.dup, s.loseAck, s.ackFault)
		if s.crash != nil {
			fmt.Fprintf(f, " %s %v", s.crash, s.again)
		}
		fmt.Fprintln(f)
	}
	return fmt.Sprintf("%016x", f.Sum64())
}
