package consumer

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/stall"
)

// The defaults of CO-5.2: distinct events in process and for a service
// (a process per replica, every call over HTTP), how many the kit
// publishes before it waits for them all to be acked, and how many it
// replays: the oldest, then a seeded sample of every age.
//
// 12000 events in process, two identities each (one per scope): a de-dupe
// store that keeps fewer than 24000 keys (an LRU of 5000 or 10000, a
// capped table), or fewer than 12000 if it keys by event, has dropped the
// oldest before they are replayed. About 8.6 s of CPU in all (kit,
// consumer and embedded NATS): some 5 s on a quiet 2-core machine.
const (
	defaultDistinct        = 12000
	defaultServiceDistinct = 1000
	capacityBatch          = 200
	replayOldest           = 100
	replaySampled          = 100
	// capacityBudget bounds the distinct phase over another broker than
	// the target's own NATS, or for a service: past it (and past capacityFloor
	// events, the earlier default) the kit stops handing new events and
	// the evidence states the reach it got.
	capacityBudget = 4 * time.Second
	capacityFloor  = 2000
	// inprocFloor is the reach below which CO-5.2 in process over NATS
	// says unknown: 6000 events are 12000 keys over two scopes, past the
	// lru-dedupe mutant's 10000. Above it the rule is paced by the target:
	// it hands distinct events while the rule's deadline leaves time for
	// one more batch and the replays at the pace measured (the average so
	// far or the median of the last paceWindow batches, whichever is
	// slower: a sustained slowdown counts, one stalled batch does not;
	// paceReserve times it, plus paceSlack), and states the reach.
	inprocFloor = 6000
	paceReserve = 2
	paceWindow  = 5
	paceSlack   = 3 * time.Second
	// Every probeEvery distinct events the kit replays the probeOldest
	// oldest events it has not replayed yet: a store that dropped them
	// already fails there.
	probeEvery  = 3000
	probeOldest = 10
)

// registerCapacity registers CO-5.2: many distinct events, then replays
// reaching back to the oldest, across a calendar boundary.
func registerCapacity(s *spec.Set, t Target) {
	s.It("CO-5.2", func(r *spec.R) {
		h := openWith(r, t, openOpts{midnight: true, quickNotify: true})
		n := capacityDistinct(t)
		// Another broker (--broker), or a service, gets a short time budget
		// (past capacityFloor events). In process over NATS the rule is
		// paced by the target up to its deadline and decides on the reach
		// it got: unknown below inprocFloor, never fail for a slow consumer.
		budgeted := t.Service != nil || t.BrokerCaps != nil
		floor := inprocFloor
		if budgeted {
			floor = capacityFloor
		}
		floor = min(floor, n) // a smaller Target.Distinct is the author's plan
		events := make([]co.Event, 0, n)
		handledAt := make([]time.Time, 0, n) // real time the event's batch was acked
		var clockAt []time.Time              // the consumer's clock then, in process
		keep := map[string]bool{}            // the messages whose ops stay in the timeline
		began, planned := time.Now(), n
		var pace time.Duration // per event (paceWindow)
		var recent []time.Duration
		// replay publishes es again under fresh broker ids, in batches,
		// each acked before the next.
		replay := func(es []co.Event) {
			for i := 0; i < len(es); i += capacityBatch {
				batch := map[string]bool{}
				for _, e := range es[i:min(i+capacityBatch, len(es))] {
					h.replays++
					keep[e.MessageID] = true
					batch[e.MessageID] = true
					h.publish(e, fmt.Sprintf("%s#replay-%d", e.EventID, h.replays))
				}
				h.settle()
				h.awaitEffects(batch)
			}
		}
		probes := 0
		for start := 0; start < n; start += capacityBatch {
			if budgeted && start >= capacityFloor && time.Since(began) > capacityBudget {
				n = start
				r.Ev.Notef("the distinct phase stopped at %d of %d events after %s (its time budget): a slow broker", n, planned, capacityBudget)
				break
			}
			if deadline, ok := r.Context().Deadline(); ok && start > 0 {
				// One more batch, a look back and the replays at the
				// pace measured, with room to spare for the judgement.
				// The deadline moves later by the kit's own pauses.
				left := time.Until(deadline)
				need := time.Duration(paceReserve*(capacityBatch+probeOldest+replayOldest+replaySampled))*pace + paceSlack + h.quietPeriod()
				if left < need {
					n = start
					r.Ev.Notef("paced by the consumer: the distinct phase stopped at %d of %d events, %s before the rule's deadline (a pace of %s per event; one more batch and the replays need about %s)",
						n, planned, left.Round(time.Millisecond), pace.Round(time.Microsecond), need.Round(time.Millisecond))
					break
				}
			}
			batchStart := time.Now()
			end := min(start+capacityBatch, n)
			batch := map[string]bool{}
			for i := start; i < end; i++ {
				events = append(events, h.event(fmt.Sprintf("m-d%d", i+1), 1))
				batch[events[i].MessageID] = true
			}
			h.publishMany(events[start:end])
			h.settle()
			now := time.Now()
			for i := start; i < end; i++ {
				h.model.apply(events[i])
				handledAt = append(handledAt, now)
				if h.clockNow != nil {
					clockAt = append(clockAt, h.clockNow())
				}
			}
			h.awaitEffects(batch)
			// The pace counts the kit's scheduled time: a batch the host
			// paused the kit in is not the consumer's pace (the deadline
			// moves by the pause too).
			now = time.Now()
			recent = append(recent, stall.Scheduled(batchStart, now)/time.Duration(end-start))
			if len(recent) > paceWindow {
				recent = recent[1:]
			}
			pace = max(median(recent), stall.Scheduled(began, now)/time.Duration(end))
			if r.Context().Err() != nil {
				r.Unknown("the rule's deadline came after %d of %d distinct events", end, n)
			}
			if end%probeEvery == 0 && end < n {
				// An early look back: a small store fails here, without
				// the rest of the distinct phase. Each look takes the
				// oldest events no earlier look replayed: a replay makes
				// its key the most recently used in an LRU.
				from := probes * probeOldest
				replay(events[from : from+probeOldest])
				probes++
				h.expectModel(fmt.Sprintf("replays of events %d to %d (of the oldest) after %d distinct events", from+1, from+probeOldest, end))
			}
		}
		phase := time.Since(began)
		h.expectModel(fmt.Sprintf("%d distinct events, each handled once", n))
		// Replays: the oldest first (a store that keeps the newest N drops
		// them), then a sample of every age.
		rnd := h.src.Rand()
		picks := make([]int, 0, replayOldest+replaySampled)
		for i := range min(replayOldest, n) {
			picks = append(picks, i)
		}
		for range replaySampled {
			if n > replayOldest {
				picks = append(picks, replayOldest+rnd.IntN(n-replayOldest))
			}
		}
		replayed := make([]co.Event, len(picks))
		for i, p := range picks {
			replayed[i] = events[p]
		}
		replay(replayed)
		reach := time.Since(handledAt[0])
		r.Ev.Figure("distinct events", n, fmt.Sprintf("one de-dupe identity each per declared scope (%d scopes): %d identities the consumer must keep", len(t.Declared.Scopes), n*len(t.Declared.Scopes)))
		r.Ev.Figure("distinct phase", phase.Round(time.Millisecond).String(), "handing the distinct events and waiting for their acks")
		r.Ev.Figure("replays", len(picks), fmt.Sprintf("the oldest %d, then %d drawn from every age", min(replayOldest, n), len(picks)-min(replayOldest, n)))
		if probes > 0 {
			r.Ev.Figure("early replays", probes*probeOldest, fmt.Sprintf("after every %d distinct events, the %d oldest no earlier look replayed", probeEvery, probeOldest))
		}
		r.Ev.Figure("reach of the oldest replay", fmt.Sprintf("%d distinct events back", n),
			fmt.Sprintf("%s real after it was handled%s", reach.Round(time.Millisecond), seedReach(h, reach)))
		scopes := len(t.Declared.Scopes)
		r.Ev.Figure("store capacity ruled out", fmt.Sprintf("below %d de-dupe keys", n*scopes),
			fmt.Sprintf("a store shared by the instances that evicts its oldest or least recently used keys below that (below %d if it keys by event, not by scope) dropped the oldest before its replay; a larger one is not ruled out", n))
		if len(clockAt) > 0 {
			crossed := h.crossed(clockAt[0], h.clockNow())
			r.Ev.Figure("calendar boundary between the oldest handling and its replay", crossed,
				fmt.Sprintf("%s boundary at %s", h.edge.Class, h.edge.At.Format(time.RFC3339)))
		}
		// The timeline keeps the replayed messages' ops: thousands of
		// events would make it unreadable and the report heavy.
		h.keepOps = func(ops []history.Op) []history.Op {
			var out []history.Op
			for _, o := range ops {
				if id, ok := opMessage(o); !ok || keep[id] {
					out = append(out, o)
				}
			}
			r.Ev.Figure("timeline kept", fmt.Sprintf("%d of %d ops", len(out), len(ops)), fmt.Sprintf("the ops of the %d replayed messages and those naming no message", len(keep)))
			return out
		}
		h.expectModel(fmt.Sprintf("replays of %d of %d distinct events, the oldest %d events back", len(picks), n, n))
		r.Ev.Figure("reach", fmt.Sprintf("%d of %d distinct events", n, planned), fmt.Sprintf("the floor below which the rule is unknown: %d", floor))
		if n < planned {
			r.Ev.Notef("reached %d distinct events and replayed back to the oldest, %d events back; a de-dupe store holding more than %d keys (%d per scope) was not reached",
				n, n, n*scopes, n)
		}
		if n < floor {
			// A paused or late kit spends the deadline too: say so, it is
			// not the consumer's pace then.
			who := "the consumer's pace"
			if late := stall.Since(began); late.Paused() || late.Lag >= stall.Floor {
				who = fmt.Sprintf("the kit's own delay (%s) and the consumer's pace", late)
			}
			r.Unknown("%s let the rule reach %d distinct events before its deadline, below its floor of %d (%d keys over %d scopes): every replay made no second effect, but a store that holds %d keys or more was not ruled out (Target.Pace declares a slower pace, which extends the deadline)",
				who, n, floor, floor*scopes, scopes, n*scopes)
		}
		r.Ev.Notef("%d distinct events, then %d replays reaching back to the oldest (%s): every (message, version, scope) effect exactly once", n, len(picks), reach.Round(time.Millisecond))
	})
}

// median is the median of ds (the upper one of an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// capacityDistinct is how many distinct events CO-5.2 plans to hand.
func capacityDistinct(t Target) int {
	switch {
	case t.Distinct > 0:
		return t.Distinct
	case t.Service != nil:
		return defaultServiceDistinct
	}
	return defaultDistinct
}

// seedReach is the reach in the consumer's seed time, in process.
func seedReach(h *world, real time.Duration) string {
	if h.scale <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%s of seed time)", time.Duration(float64(real)*h.scale).Round(time.Second))
}

// opMessage is the message an op names ("evt:m-d12@co-5.2-abc123:v99"
// names "m-d12@co-5.2-abc123"), if any.
func opMessage(o history.Op) (string, bool) {
	for _, s := range []string{o.Value, o.Result} {
		if i := strings.Index(s, "evt:"); i >= 0 {
			rest := s[i+len("evt:"):]
			if j := strings.LastIndex(rest, ":v"); j > 0 {
				return rest[:j], true
			}
		}
	}
	return "", false
}
