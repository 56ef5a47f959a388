package consumer

import (
	"fmt"
	"strings"

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
	kind    stepKind
	event   co.Event
	older   co.Event // stepPair: the older of the two versions (event is the newer)
	dup     bool     // stepPair: a second copy of each version too
	crash   *plan    // armed before the step, if any
	loseAck bool     // the kit loses the first ack, so the broker redelivers
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
func (h *harness) play(s step) {
	if s.crash != nil {
		h.arm(*s.crash)
	}
	if s.loseAck {
		h.loseAcks(s.event.EventID, 1)
	}
	switch s.kind {
	case stepNew:
		h.publish(s.event, s.event.EventID)
	case stepReplay:
		// A replay by a recovery process (seed 002, 五): the same event id
		// under a broker message id of its own, so that the broker's
		// producer de-dupe, which is not the consumer's, lets it through.
		h.replays++
		h.publish(s.event, fmt.Sprintf("%s#replay-%d", s.event.EventID, h.replays))
	case stepTwin:
		h.addGate(2, s.event.EventID)
		h.publish(s.event, s.event.EventID+"#a")
		h.publish(s.event, s.event.EventID+"#b")
	case stepPair:
		// Two versions first delivered at the same moment to two workers,
		// the newer published first: what a nak delay, a redelivery after
		// the ack wait or a replay makes of an edit on a real broker.
		h.addGate(2, s.event.EventID, s.older.EventID)
		h.publish(s.event, s.event.EventID)
		h.publish(s.older, s.older.EventID)
		if s.dup {
			h.publish(s.event, s.event.EventID+"#dup")
			h.publish(s.older, s.older.EventID+"#dup")
		}
	}
	h.settle()
	if s.kind == stepPair {
		// Their order is the race's: the model takes the older first and
		// lets its index write be skipped (it is superseded either way).
		h.model.apply(s.older)
	}
	h.model.apply(s.event)
	h.disarm()
}

// diff compares the sinks with the model now.
func (h *harness) diff() []difference {
	effects := append(h.index.Effects(), h.notifier.Effects()...)
	return h.model.diff(effects, h.index.Docs())
}

// expectModel fails the rule when a sink differs from the model, with every
// difference in the evidence and the history of the first message that
// differs as the smallest history. After crashes it first calls Reconcile
// on a fresh instance, if the consumer has one (seed 002, 三: 除非另有对账/重建).
func (h *harness) expectModel(why string) {
	h.mu.Lock()
	crashed := h.crashes > h.reconciled
	h.reconciled = h.crashes
	h.mu.Unlock()
	if crashed {
		if rc := h.reconcile(); rc != "" {
			h.ev.Notef("after the crashes, before judging: %s", rc)
		}
	}
	diffs := h.diff()
	h.ev.Figure("index writes observed", len(h.index.Effects()), "")
	h.ev.Figure("notifications observed", len(h.notifier.Effects()), "")
	if len(diffs) == 0 {
		return
	}
	lines := make([]string, len(diffs))
	for i, d := range diffs {
		lines[i] = d.String()
		h.ev.Notef("differs from the model: %s", d)
	}
	h.ev.Smallest(opsAbout(h.rec.Ops(), diffs[0].MessageID))
	more := ""
	if len(diffs) > 1 {
		more = fmt.Sprintf(" (and %d more differences)", len(diffs)-1)
	}
	h.r.Expect(lines).To(gomega.BeEmpty(), "%s: %s%s", why, lines[0], more)
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
