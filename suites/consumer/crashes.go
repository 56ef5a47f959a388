package consumer

import (
	"context"
	"fmt"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
)

func registerCrashes(s *spec.Set, t Target) {
	s.It("CO-2.1", func(ctx context.Context, ev *verdict.Evidence) {
		r := newRun(newHarness(ctx, t, "CO-2.1", ev, workers))
		e := co.NewEvent("m-9", 1)
		r.step(Step{Kind: StepNew, Event: e, Crash: &plan{Point: BeforeAck, Event: e.EventID}})
		if r.fired(e.EventID) == 0 {
			spec.Unknown("the consumer acked %s without reaching the kit's ack", e.EventID)
		}
		ev.Figure("deliveries of "+e.EventID, r.attempts(e.EventID), "")
		r.expectModel("a crash after the effects of " + e.EventID + " and before its ack, then the redelivery")
		ev.Notef("the redelivery after the crash before the ack made no second effect")
	})

	s.It("CO-2.2", func(ctx context.Context, ev *verdict.Evidence) {
		r := newRun(newHarness(ctx, t, "CO-2.2", ev, workers))
		e := co.NewEvent("m-9", 1)
		r.step(Step{Kind: StepNew, Event: e, Crash: &plan{Point: AfterAck, Event: e.EventID}})
		if r.fired(e.EventID) == 0 {
			spec.Unknown("the consumer never acked %s through the kit", e.EventID)
		}
		if lost := r.diff(); len(lost) > 0 {
			rc := r.reconcile()
			if rc == "" {
				r.expectModel("a crash right after the ack of " + e.EventID + " (the broker will not redeliver; the consumer has no Reconcile)")
			}
			ev.Notef("effects lost at the ack were handed to Reconcile: %s", rc)
			r.expectModel("a crash right after the ack of " + e.EventID + ", then Reconcile")
			ev.Notef("Reconcile restored the effects lost to the ack-first crash")
			return
		}
		ev.Notef("every effect of %s was done before its ack: a crash right after the ack lost nothing", e.EventID)
	})

	s.It("CO-2.3", func(ctx context.Context, ev *verdict.Evidence) {
		r := newRun(newHarness(ctx, t, "CO-2.3", ev, workers))
		fired := 0
		for _, c := range []struct{ m, scope string }{{"m-a", co.ScopeNotify}, {"m-b", co.ScopeIndex}} {
			if !has(t.Declared.Scopes, c.scope) {
				continue
			}
			e := co.NewEvent(c.m, 1)
			r.step(Step{Kind: StepNew, Event: e, Crash: &plan{Point: AfterEffect, Event: e.EventID, Scope: c.scope}})
			fired += r.fired(e.EventID)
			r.expectModel(fmt.Sprintf("a crash right after the %s effect of %s, before its de-dupe record", c.scope, e.EventID))
		}
		if fired == 0 {
			spec.Unknown("the consumer made no sink call the kit could crash after")
		}
		ev.Notef("a crash between each effect and what follows it made no second effect")
	})
}

// reconcile calls Reconcile on a fresh instance, if the consumer has one,
// and returns what it did ("" when the consumer has no Reconcile).
func (r *run) reconcile() (out string) {
	inst, err := r.startInstance("reconciler")
	if err != nil {
		spec.Unknown("starting an instance to reconcile: %v", err)
	}
	defer r.kill(inst)
	rc, ok := inst.c.(co.Reconciler)
	if !ok {
		return ""
	}
	defer func() {
		if p := recover(); p != nil {
			out = fmt.Sprintf("Reconcile panicked: %v", p)
		}
	}()
	op := r.rec.Invoke(inst.name, "reconcile", "")
	if err := rc.Reconcile(r.ctx); err != nil {
		op.Info(err.Error())
		return "Reconcile failed: " + err.Error()
	}
	op.OK("done")
	return "Reconcile returned"
}
