package consumer

import (
	"fmt"

	"github.com/onceproof/tck/co"
)

// point is a place in a consumer's handling where the kit can end the
// instance. The kit owns every such place: they are its own sink and ack
// wrappers, so no cooperation of the consumer is needed.
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

// plan arms one crash: the first time an instance reaches point for event
// (and scope, for effect points; call n, for call points), it ends.
type plan struct {
	point point
	event string
	scope string // "" matches any scope
	n     int    // the call, for call points
	fired bool
}

func (p plan) String() string {
	s := string(p.point)
	if p.n > 0 {
		s += fmt.Sprintf(" %d", p.n)
	}
	if p.scope != "" {
		s += " " + p.scope
	}
	return s
}

// arm adds crash plans.
func (h *harness) arm(ps ...plan) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range ps {
		h.plans = append(h.plans, &p)
		h.rec.Note("kit", "arm crash", p.event, p.String())
	}
}

// fired reports how many plans for event fired.
func (h *harness) fired(event string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, p := range h.plans {
		if p.event == event && p.fired {
			n++
		}
	}
	return n
}

// shouldCrash consumes the first matching unfired plan.
func (h *harness) shouldCrash(pt point, event, scope string, n int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.plans {
		if !p.fired && p.point == pt && p.event == event && (p.scope == "" || p.scope == scope) && p.n == n {
			p.fired = true
			h.crashes++
			return true
		}
	}
	return false
}

// disarm drops plans a step did not reach (a consumer that skipped a
// duplicate makes no sink call to crash in), so they cannot fire later.
func (h *harness) disarm() {
	h.mu.Lock()
	defer h.mu.Unlock()
	kept := h.plans[:0]
	for _, p := range h.plans {
		if p.fired {
			kept = append(kept, p)
		} else {
			h.rec.Note("kit", "disarm", p.event, p.String()+" not reached")
		}
	}
	h.plans = kept
}

// enter is every kit wrapper's first step. A call by an ended instance is
// refused (ErrEnded) and recorded as "after death"; otherwise the call is
// counted for the delivery kd it belongs to (nil: none, e.g. a factory or
// Reconcile call), and an armed plan for it, or for pt, ends the instance
// here, before the call. It returns the call's number in its delivery.
func (inst *instance) enter(kd *kitDelivery, label string, pt point, event, scope string) (int, error) {
	h := inst.h
	if inst.dead.Load() {
		h.afterDeath(inst, label, event)
		return 0, co.ErrEnded
	}
	n := 0
	if kd != nil {
		n = kd.count(label)
		if h.shouldCrash(beforeCall, kd.e.EventID, "", n) {
			h.end(inst, fmt.Sprintf("crash before call %d (%s)", n, label), kd.e.EventID)
			return n, co.ErrEnded
		}
	}
	if pt != "" && h.shouldCrash(pt, event, scope, 0) {
		h.end(inst, "crash "+string(pt)+" "+scope, event)
		return n, co.ErrEnded
	}
	return n, nil
}

// leave is every kit wrapper's last step, after the real call: an instance
// ended meanwhile gets ErrEnded (what it did took effect all the same); an
// armed plan for call n, or for pt, ends the instance here.
func (inst *instance) leave(kd *kitDelivery, n int, label string, pt point, event, scope string) error {
	h := inst.h
	if inst.dead.Load() {
		return co.ErrEnded
	}
	if kd != nil && n > 0 && h.shouldCrash(afterCall, kd.e.EventID, "", n) {
		h.end(inst, fmt.Sprintf("crash after call %d (%s)", n, label), kd.e.EventID)
		return co.ErrEnded
	}
	if pt != "" && h.shouldCrash(pt, event, scope, 0) {
		h.end(inst, "crash "+string(pt)+" "+scope, event)
		return co.ErrEnded
	}
	return nil
}

// end ends inst as a crash: recorded, then killed.
func (h *harness) end(inst *instance, why, event string) {
	h.rec.Note(inst.name, "crash", event, why)
	h.kill(inst)
}

// afterDeath records a call an ended instance still made (a goroutine of
// the consumer that went on); the kit refused it.
func (h *harness) afterDeath(inst *instance, label, event string) {
	h.mu.Lock()
	h.refused++
	h.mu.Unlock()
	h.rec.Note(inst.name, "after death", event, label+" refused")
}
