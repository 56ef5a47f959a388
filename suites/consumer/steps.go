package consumer

import (
	"fmt"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/history"
)

// stepKind is what one step does.
type stepKind string

const (
	stepNew    stepKind = "new"    // publish an event not published before (a first version or an edit)
	stepReplay stepKind = "replay" // publish an already handled event again (same event id; a stale one if newer versions exist)
	stepTwin   stepKind = "twin"   // publish two copies of a new event at once, held for two workers (CO-1.5)
	stepPair   stepKind = "pair"   // publish two new versions of one message at once, held for two workers (CO-1.7)
)

// step is one step of a rule or a schedule.
type step struct {
	kind     stepKind
	event    co.Event
	older    co.Event  // stepPair: the older of the two versions (event is the newer)
	dup      bool      // stepPair: a second copy of each version too
	crash    *tripwire // armed before the step, if any
	again    bool      // crash armed twice: the delivery that takes over crashes at the same point
	loseAck  bool      // the kit loses the first ack, so the broker redelivers
	ackFault faultKind // the kit fails the first ack (faults.go), where the transport can
	kill     *anyKill  // a worker killed at a moment of the step, where the transport can (killsAnywhere)
}

// anyKill ends a worker wherever it is: inside its own transaction,
// between two calls, idle.
type anyKill struct {
	worker int           // which worker, modulo their number
	after  time.Duration // after the step's publish
}

// publishes counts the broker messages a step publishes.
func (s step) publishes() int {
	switch {
	case s.kind == stepTwin, s.kind == stepPair && !s.dup:
		return 2
	case s.kind == stepPair:
		return 4
	}
	return 1
}

// play publishes one step, waits until it is acked, and feeds the model.
// Steps run one at a time, so the model knows the order.
func (w *world) play(s step) {
	if s.crash != nil {
		w.arm(*s.crash)
		if s.again {
			w.arm(*s.crash)
		}
	}
	if s.loseAck {
		w.loseAcks(s.event.EventID, 1)
	}
	if s.ackFault != "" {
		w.failAck(s.event.EventID, s.ackFault)
	}
	switch s.kind {
	case stepNew:
		w.publish(s.event, s.event.EventID)
	case stepReplay:
		// A replay by a recovery process (seed 002, 五): the same event id
		// under a broker message id of its own, so that the broker's
		// producer de-dupe, which is not the consumer's, lets it through.
		w.replays++
		w.publish(s.event, fmt.Sprintf("%s#replay-%d", s.event.EventID, w.replays))
	case stepTwin:
		w.addGate(2, s.event.EventID)
		w.publish(s.event, s.event.EventID+"#a")
		w.publish(s.event, s.event.EventID+"#b")
	case stepPair:
		// Two versions first delivered at the same moment to two workers,
		// the newer published first: what a nak delay, a redelivery after
		// the ack wait or a replay makes of an edit on a real broker.
		w.addGate(2, s.event.EventID, s.older.EventID)
		w.publish(s.event, s.event.EventID)
		w.publish(s.older, s.older.EventID)
		if s.dup {
			w.publish(s.event, s.event.EventID+"#dup")
			w.publish(s.older, s.older.EventID+"#dup")
		}
	}
	if s.kill != nil && w.tr.killsAnywhere() {
		w.tr.kill(s.kill, s.event.EventID)
	}
	w.settle()
	w.tr.stepped()
	if s.kind == stepPair {
		// Their order is the race's: the model takes the older first and
		// lets its index write be skipped (it is superseded either way).
		w.model.apply(s.older)
	}
	w.model.apply(s.event)
	// The step is over when its effects are: a consumer that does them
	// after the ack (a durable task queue) has them come before the next
	// step, so their order is the schedule's, and a crash or failure armed
	// for them can still fire.
	only := map[string]bool{s.event.MessageID: true}
	w.awaitEffects(only)
	w.disarm()
	if len(w.diffOf(only)) > 0 {
		// Judged now, not at the rule's next judgement: the steps between
		// would each wait for effects of a message that already differs.
		w.expectAckedOnlyAfterEffects()
		why := "the step that published " + s.event.EventID
		if len(w.failedCalls(s.event.EventID)) > 0 {
			why = w.failedWhy(s.event) // names the calls the kit failed (CO-2.7)
		}
		w.expectModel(why)
	}
}

// diff compares the sinks with the model now.
func (w *world) diff() []difference {
	return w.model.diff(w.tr.observed())
}

// expectModel fails the rule when a sink differs from the model, with every
// difference in the evidence and the history of the first message that
// differs as the smallest history. The transport may act first (in process,
// after crashes, a Reconcile on a fresh instance: seed 002, 三: 除非另有对账/重建).
func (w *world) expectModel(why string) {
	w.tr.judging()
	// Effects are judged when they settle, not at the ack (quiesce.go).
	quiet := w.awaitEffects(nil)
	effects, docs := w.tr.observed()
	diffs := w.model.diff(effects, docs)
	writes := 0
	for _, e := range effects {
		if e.Scope == co.ScopeIndex {
			writes++
		}
	}
	w.ev.Figure("index writes observed", writes, w.words.observed)
	w.ev.Figure("notifications observed", len(effects)-writes, w.words.observed)
	if len(diffs) == 0 {
		return
	}
	lines := make([]string, len(diffs))
	for i, d := range diffs {
		lines[i] = d.String()
		w.ev.Notef("differs from the model: %s", d)
	}
	w.ev.Smallest(opsAbout(w.rec.Ops(), diffs[0].MessageID))
	if starved := w.overrunExplains(diffs); starved != "" {
		w.ev.SetupHazard("a worker starved on a busy host held a delivery past the broker's ack wait on the kit's scaled clock")
		w.r.Unknown("%s: every difference from the model is a duplicate that a starved worker explains (the kit's clock runs %.0f times real time, so a slow call on a busy host is minutes to the broker), which says nothing of the consumer: %s", why, w.scale, starved)
	}
	if !quiet {
		// Not quiet: only what no wait can mend is evidence.
		var sure []string
		for _, d := range diffs {
			if !d.pendingKind() {
				sure = append(sure, d.String())
			}
		}
		if len(sure) == 0 {
			w.r.Unknown("%s: %s, but the consumer was still busy when the kit stopped waiting for its effects: a missing effect is lost only once the consumer is quiet with nothing pending", why, lines[0])
		}
		lines = sure
	}
	more := ""
	if len(lines) > 1 {
		more = fmt.Sprintf(" (and %d more differences)", len(lines)-1)
	}
	w.r.Expect(lines).To(gomega.BeEmpty(), "%s: %s%s", why, lines[0], more)
}

// opsAbout returns the timeline ops whose value names message m: the
// smallest history that shows what happened to it.
func opsAbout(ops []history.Op, m string) []history.Op {
	var out []history.Op
	needle := ":" + m + ":"
	for _, o := range ops {
		if strings.Contains(o.Value, needle) || strings.Contains(o.Result, needle) {
			out = append(out, o)
		}
	}
	return out
}
