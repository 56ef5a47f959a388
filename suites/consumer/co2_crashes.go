package consumer

import (
	"fmt"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/spec"
)

// registerCrashes registers CO-2.*: crashes around the effects and the ack.
func registerCrashes(s *spec.Set, t Target) {
	s.It("CO-2.1", func(r *spec.R) {
		h := newHarness(r, t, workers)
		e := co.NewEvent("m-9", 1)
		h.play(step{kind: stepNew, event: e, crash: &plan{point: beforeAck, event: e.EventID}})
		if h.fired(e.EventID) == 0 {
			r.Unknown("the consumer acked %s without reaching the kit's ack", e.EventID)
		}
		r.Ev.Figure("deliveries of "+e.EventID, h.attempts(e.EventID), "")
		h.expectModel("a crash after the effects of " + e.EventID + " and before its ack, then the redelivery")
		r.Ev.Notef("the redelivery after the crash before the ack made no second effect")
	})

	s.It("CO-2.2", func(r *spec.R) {
		h := newHarness(r, t, workers)
		e := co.NewEvent("m-9", 1)
		h.play(step{kind: stepNew, event: e, crash: &plan{point: afterAck, event: e.EventID}})
		if h.fired(e.EventID) == 0 {
			r.Unknown("the consumer never acked %s through the kit", e.EventID)
		}
		if len(h.diff()) == 0 {
			r.Ev.Notef("every effect of %s was done before its ack: a crash right after the ack lost nothing", e.EventID)
			return
		}
		rc := h.reconcile()
		if rc == "" {
			h.expectModel("a crash right after the ack of " + e.EventID + " (the broker will not redeliver; the consumer has no Reconcile)")
		}
		r.Ev.Notef("effects lost at the ack were handed to Reconcile: %s", rc)
		h.expectModel("a crash right after the ack of " + e.EventID + ", then Reconcile")
		r.Ev.Notef("Reconcile restored the effects lost to the ack-first crash")
	})

	s.It("CO-2.3", func(r *spec.R) {
		h := newHarness(r, t, workers)
		fired := 0
		for _, c := range []struct{ m, scope string }{{"m-a", co.ScopeNotify}, {"m-b", co.ScopeIndex}} {
			if !has(t.Declared.Scopes, c.scope) {
				continue
			}
			e := co.NewEvent(c.m, 1)
			h.play(step{kind: stepNew, event: e, crash: &plan{point: afterEffect, event: e.EventID, scope: c.scope}})
			fired += h.fired(e.EventID)
			h.expectModel(fmt.Sprintf("a crash right after the %s effect of %s, before its de-dupe record", c.scope, e.EventID))
		}
		if fired == 0 {
			r.Unknown("the consumer made no sink call the kit could crash after")
		}
		r.Ev.Notef("a crash between each effect and what follows it made no second effect")
	})
}

// reconcile calls Reconcile on a fresh instance, if the consumer has one,
// and returns what it did ("" when the consumer has no Reconcile).
func (h *harness) reconcile() (out string) {
	inst, err := h.startInstance("reconciler")
	if err != nil {
		h.r.Unknown("starting an instance to reconcile: %v", err)
	}
	defer h.kill(inst)
	rc, ok := inst.c.(co.Reconciler)
	if !ok {
		return ""
	}
	defer func() {
		if p := recover(); p != nil {
			out = fmt.Sprintf("Reconcile panicked: %v", p)
		}
	}()
	op := h.rec.Invoke(inst.name, "reconcile", "")
	if err := rc.Reconcile(h.ctx); err != nil {
		op.Info(err.Error())
		return "Reconcile failed: " + err.Error()
	}
	op.OK("done")
	return "Reconcile returned"
}
