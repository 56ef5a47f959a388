package consumer

import (
	"fmt"
)

// point is a place in a consumer's handling where the kit can end the
// instance. The kit owns every such place: its own sink and ack wrappers
// in process, its proxy and its HTTP sinks for a service, so no
// cooperation of the consumer is needed.
type point string

const (
	beforeEffect point = "before-effect" // just before a sink call (index write or notification)
	afterEffect  point = "after-effect"  // just after a sink call returned
	beforeAck    point = "before-ack"    // just before the ack reaches the broker
	afterAck     point = "after-ack"     // just after the broker confirmed the ack
	beforeCall   point = "before-call"   // just before the n-th call a delivery makes (any sink, the store, the ack)
	afterCall    point = "after-call"    // just after the n-th call a delivery made returned
	beforePub    point = "before-publish"
	afterPub     point = "after-publish"
)

// tripwire arms one crash: the first time an instance reaches point for
// event (and scope, for effect points; call n, for call points), it ends.
type tripwire struct {
	point point
	event string
	scope string // "" matches any scope
	n     int    // the call, for call points
	fired bool
}

func (p tripwire) String() string {
	s := string(p.point)
	if p.n > 0 {
		s += fmt.Sprintf(" %d", p.n)
	}
	if p.scope != "" {
		s += " " + p.scope
	}
	return s
}

// arm adds tripwires.
func (w *world) arm(ps ...tripwire) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range ps {
		w.wires = append(w.wires, &p)
		w.rec.Note("kit", "arm crash", p.event, p.String())
	}
}

// fired reports how many tripwires for event fired.
func (w *world) fired(event string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, p := range w.wires {
		if p.event == event && p.fired {
			n++
		}
	}
	return n
}

// trip consumes the first matching unfired tripwire.
func (w *world) trip(pt point, event, scope string, n int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.wires {
		if !p.fired && p.point == pt && p.event == event && (p.scope == "" || p.scope == scope) && p.n == n {
			p.fired = true
			return true
		}
	}
	return false
}

// tripAround is every crash point of a call, before it (before true) or
// after it: the call's number n in the delivery of event delivery (none
// when n is 0), then the point pt for (event, scope) (none when pt is "").
// When one fires it says how the crash is described and which event it is
// about; why is "" when none fired.
func (w *world) tripAround(before bool, delivery string, n int, label string, pt point, event, scope string) (why, about string) {
	call, when := afterCall, "after"
	if before {
		call, when = beforeCall, "before"
	}
	if n > 0 && w.trip(call, delivery, "", n) {
		return fmt.Sprintf("crash %s call %d (%s)", when, n, label), delivery
	}
	if pt != "" && w.trip(pt, event, scope, 0) {
		return "crash " + string(pt) + " " + scope, event
	}
	return "", ""
}

// disarm drops tripwires a step did not reach (a consumer that skipped a
// duplicate makes no sink call to crash in), so they cannot fire later.
func (w *world) disarm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	kept := w.wires[:0]
	for _, p := range w.wires {
		if p.fired {
			kept = append(kept, p)
		} else {
			w.rec.Note("kit", "disarm", p.event, p.String()+" not reached")
		}
	}
	w.wires = kept
	for event, kind := range w.ackFaults {
		w.rec.Note("kit", "disarm", event, "ack failure "+string(kind)+" not reached")
	}
	clear(w.ackFaults)
}
