package consumer

import "fmt"

// point is a place in a consumer's handling where the kit can end the
// instance. The kit owns every such place: they are its own sink and ack
// wrappers, so no cooperation of the consumer is needed.
type point string

const (
	beforeEffect point = "before-effect" // just before a sink call (index write or notification)
	afterEffect  point = "after-effect"  // just after a sink call returned
	beforeAck    point = "before-ack"    // just before the ack reaches the broker
	afterAck     point = "after-ack"     // just after the broker confirmed the ack
	beforePub    point = "before-publish"
	afterPub     point = "after-publish"
)

// crash is the sentinel a kit wrapper panics with, inside the consumer's
// goroutine, to end an instance. The worker recovers it, closes the
// instance's broker connection and store handle and drops the instance: its
// memory is gone, as after a process crash.
type crash struct {
	point point
	event string
	scope string
	stale bool // a call by an instance that was already ended
}

func (c crash) String() string {
	if c.stale {
		return "call by an ended instance"
	}
	s := fmt.Sprintf("crash %s %s", c.point, c.event)
	if c.scope != "" {
		s += " (" + c.scope + ")"
	}
	return s
}

// plan arms one crash: the first time an instance reaches point for event
// (and scope, for effect points), it ends.
type plan struct {
	point point
	event string
	scope string // "" matches any scope
	fired bool
}

// arm adds crash plans.
func (h *harness) arm(ps ...plan) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range ps {
		h.plans = append(h.plans, &p)
		h.rec.Note("kit", "arm crash", p.event, string(p.point)+" "+p.scope)
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
func (h *harness) shouldCrash(pt point, event, scope string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.plans {
		if !p.fired && p.point == pt && p.event == event && (p.scope == "" || p.scope == scope) {
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
			h.rec.Note("kit", "disarm", p.event, string(p.point)+" "+p.scope+" not reached")
		}
	}
	h.plans = kept
}

// at is every kit wrapper's first and last step: a call by an ended
// instance ends again; an armed plan ends the instance here. pt "" only
// checks that the instance is alive.
func (inst *instance) at(pt point, event, scope string) {
	if inst.dead.Load() {
		panic(crash{stale: true})
	}
	if pt != "" && inst.h.shouldCrash(pt, event, scope) {
		inst.dead.Store(true)
		inst.h.rec.Note(inst.name, "crash", event, string(pt)+" "+scope)
		panic(crash{point: pt, event: event, scope: scope})
	}
}
