package consumer

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/history"
)

// In process the consumer's clock runs Timing.Scale times faster than real
// time, so the broker's ack wait of minutes is a tenth of a real second. A
// worker that a busy host starves for that long in the middle of one
// delivery (a notify call that should take a millisecond takes 270 ms) is,
// on the consumer's clock, a worker that held a delivery for minutes: the
// broker redelivers, another worker takes it over, and both effects land.
// That is the kit's compressed time, not the consumer's design: such a
// duplicate is unknown, with the overrun named. A consumer that doubles an
// effect without such an overrun still fails.

// ackWaitReal is the broker's ack wait in real time.
func (h *inproc) ackWaitReal() time.Duration { return h.clock.Real(h.tm.AckWait) }

// overrunExplains returns why every difference is a duplicate effect that a
// delivery held past the ack wait explains, or "" when one is not.
func (w *world) overrunExplains(diffs []difference) string {
	tr, ok := w.tr.(interface{ ackWaitReal() time.Duration })
	if !ok || len(diffs) == 0 {
		return ""
	}
	ackWait := tr.ackWaitReal()
	ops := w.rec.Ops()
	var whys []string
	for _, d := range diffs {
		if d.Document || d.Body || d.what() != "duplicate effect" {
			return ""
		}
		why := overrun(ops, d, ackWait)
		if why == "" {
			return ""
		}
		whys = append(whys, why)
	}
	return strings.Join(whys, "; ")
}

// overrun explains duplicate d when, of two effect calls for it by two
// workers, the first worker had held its delivery for longer than the ack
// wait when that call returned, and the second worker got the event while
// the first call had not returned.
func overrun(ops []history.Op, d difference, ackWait time.Duration) string {
	ev := co.EventID(d.MessageID, d.Version)
	var effects []history.Op
	for _, o := range ops {
		if o.Value == ev && o.Outcome != "" && isEffect(o.Action, d.Scope) {
			effects = append(effects, o)
		}
	}
	slices.SortFunc(effects, func(a, b history.Op) int { return int(a.Start - b.Start) })
	for i, a := range effects {
		da, ok := deliveryBefore(ops, a, ev)
		if !ok || a.End-da.Start < ackWait {
			continue
		}
		for _, b := range effects[i+1:] {
			if b.Actor == a.Actor {
				continue
			}
			if db, ok := deliveryBefore(ops, b, ev); ok && db.Start < a.End {
				held := a.End - da.Start
				return fmt.Sprintf("%s: %s held its delivery %s real before its %s returned, past the broker's ack wait of %s real, and %s got the event meanwhile",
					effectKey{d.MessageID, d.Version, d.Scope}, a.Actor, held.Round(time.Millisecond), a.Action, ackWait, b.Actor)
			}
		}
	}
	return ""
}

// isEffect says whether a timeline action is an effect call of scope.
func isEffect(action, scope string) bool {
	if scope == co.ScopeNotify {
		return action == "notify"
	}
	return strings.HasPrefix(action, "index ")
}

// deliveryBefore is the last delivery of event ev (a replay's or twin's
// suffix aside) to effect's actor before the effect call began.
func deliveryBefore(ops []history.Op, effect history.Op, ev string) (history.Op, bool) {
	var last history.Op
	found := false
	for _, o := range ops {
		if o.Actor != effect.Actor || o.Action != "deliver" || o.Start > effect.Start {
			continue
		}
		if o.Value == ev || strings.HasPrefix(o.Value, ev+"#") {
			last, found = o, true
		}
	}
	return last, found
}
