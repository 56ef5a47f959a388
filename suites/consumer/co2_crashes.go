package consumer

import (
	"fmt"
	"strings"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/spec"
)

// registerCrashes registers CO-2.*: crashes around the effects and the ack,
// failing sinks, and a crash at every step of one delivery.
func registerCrashes(s *spec.Set, t Target) {
	s.It("CO-2.1", func(r *spec.R) {
		h := open(r, t)
		e := h.event("m-9", 1)
		h.play(step{kind: stepNew, event: e, crash: &tripwire{point: beforeAck, event: e.EventID}})
		if h.fired(e.EventID) == 0 {
			r.Unknown("the consumer acked %s without reaching the kit's ack", e.EventID)
		}
		r.Ev.Figure("deliveries of "+e.EventID, h.attempts(e.EventID), "")
		h.expectModel("a crash after the effects of " + e.EventID + " and before its ack, then the redelivery")
		r.Ev.Notef("the redelivery after the crash before the ack made no second effect")
	})

	s.It("CO-2.2", func(r *spec.R) {
		h := open(r, t)
		e := h.event("m-9", 1)
		h.play(step{kind: stepNew, event: e, crash: &tripwire{point: afterAck, event: e.EventID}})
		if h.fired(e.EventID) == 0 {
			r.Unknown("the consumer never acked %s through the kit", e.EventID)
		}
		// expectModel calls Reconcile on a fresh instance first, if the
		// consumer has one: the broker will not redeliver an acked event.
		h.expectModel("a crash right after the ack of " + e.EventID + " (then Reconcile, if the consumer has one)")
		r.Ev.Notef("every effect of %s was there after a crash right after its ack", e.EventID)
	})

	s.It("CO-2.3", func(r *spec.R) {
		h := open(r, t)
		fired := 0
		for _, c := range []struct{ m, scope string }{{"m-a", co.ScopeNotify}, {"m-b", co.ScopeIndex}} {
			if !has(t.Declared.Scopes, c.scope) {
				continue
			}
			e := h.event(c.m, 1)
			h.play(step{kind: stepNew, event: e, crash: &tripwire{point: afterEffect, event: e.EventID, scope: c.scope}})
			fired += h.fired(e.EventID)
			h.expectModel(fmt.Sprintf("a crash right after the %s effect of %s, before its de-dupe record", c.scope, e.EventID))
		}
		if fired == 0 {
			r.Unknown("the consumer made no sink call the kit could crash after")
		}
		r.Ev.Notef("a crash between each effect and what follows it made no second effect")
	})

	s.It("CO-2.4", func(r *spec.R) {
		h := open(r, t)
		fired := 0
		i := 0
		for _, scope := range t.Declared.Scopes {
			for _, kind := range []faultKind{faultError, faultTimeout} {
				i++
				e := h.event(fmt.Sprintf("m-fail-%d", i), 1)
				h.injectFault(fault{event: e.EventID, scope: scope, kind: kind})
				before := h.faultCount()
				h.play(step{kind: stepNew, event: e})
				if h.faultCount() == before {
					r.Ev.Notef("case %s %s: the consumer made no %s call for %s", scope, kind, scope, e.EventID)
					continue
				}
				fired++
				r.Ev.Figure(fmt.Sprintf("deliveries of %s (%s %s)", e.EventID, scope, kind), h.attempts(e.EventID), "")
				h.expectAckedOnlyAfterEffects()
				h.expectModel(fmt.Sprintf("the first %s call of %s failed (%s)", scope, e.EventID, describeFault(kind)))
			}
		}
		if fired == 0 {
			r.Unknown("the consumer made no sink call the kit could fail")
		}
		r.Ev.Figure("failed sink calls", fired, "an error before the effect, or a timeout after it, per declared scope")
		r.Ev.Notef("no delivery was acked with a failed effect; each came back and every effect counted exactly once")
	})

	s.It("CO-2.5", func(r *spec.R) {
		h := open(r, t)
		// A clean delivery first: its calls, in order, are the steps the
		// kit then crashes at, one fresh message per step.
		probe := h.event("m-probe", 1)
		h.play(step{kind: stepNew, event: probe})
		h.expectModel("the clean handling of " + probe.EventID)
		calls := h.trace(probe.EventID)
		if len(calls) == 0 {
			r.Unknown("the consumer made no call through the kit while handling %s", probe.EventID)
		}
		r.Ev.Figure("steps of one delivery", strings.Join(calls, " → "), "")
		cases := 0
		for k := 1; k <= len(calls)+1; k++ {
			e := h.event(fmt.Sprintf("m-step-%d", k), 1)
			var p tripwire
			var name string
			if k <= len(calls) {
				p = tripwire{point: beforeCall, event: e.EventID, n: k}
				name = fmt.Sprintf("crash before step %d/%d (%s): %s", k, len(calls), calls[k-1], stepRole(calls, k))
			} else {
				p = tripwire{point: afterCall, event: e.EventID, n: len(calls)}
				last := calls[len(calls)-1]
				role := "after the last step"
				if last == "ack" {
					role = "after the ack"
				}
				name = fmt.Sprintf("crash after step %d/%d (%s): %s", len(calls), len(calls), last, role)
			}
			h.play(step{kind: stepNew, event: e, crash: &p})
			if h.fired(e.EventID) == 0 {
				r.Ev.Notef("case %q: not reached (the handling of %s took other steps)", name, e.EventID)
				continue
			}
			cases++
			r.Ev.Notef("case %q on %s", name, e.EventID)
			h.expectModel(name + " of " + e.EventID)
		}
		r.Ev.Figure("crash points exercised", cases, "")
		// Edits and take-overs: an edit (version 2 of a message whose
		// version 1 was handled) crashes just before its effect of each
		// scope, and so does the delivery that takes the dead instance's
		// work over; a take-over must ask whether this version's effect is
		// there, not whether the message has one.
		takeovers := 0
		for i, scope := range t.Declared.Scopes {
			m := fmt.Sprintf("m-edit-%d", i+1)
			v1, v2 := h.event(m, 1), h.event(m, 2)
			h.play(step{kind: stepNew, event: v1})
			p := tripwire{point: beforeEffect, event: v2.EventID, scope: scope}
			// The first scope's take-over crashes too (a lease each: keep it to one).
			h.play(step{kind: stepNew, event: v2, crash: &p, again: i == 0})
			fired := h.fired(v2.EventID)
			if fired == 0 {
				r.Ev.Notef("case edit %s: the consumer made no %s call to crash before", v2.EventID, scope)
				continue
			}
			cases++
			takeovers += fired - 1
			name := fmt.Sprintf("crash before the %s effect of the edit %s (after %s), and %d more in its take-over", scope, v2.EventID, v1.EventID, fired-1)
			r.Ev.Notef("case %q", name)
			h.expectModel(name)
		}
		r.Ev.Figure("take-overs crashed", takeovers, "deliveries that took a dead instance's claim of an edit over and crashed before its effect too")
		r.Ev.Notef("a crash at each of the %d steps of one delivery, and after the last, and before each effect of an edit and of its take-over, left every effect exactly once", len(calls))
	})
}

func describeFault(k faultKind) string {
	if k == faultTimeout {
		return "a timeout after the effect took place"
	}
	return "an error before it took effect"
}

// stepRole names what a crash before call k interrupts, read from the
// kinds of the calls around it: the seed's steps (the de-dupe check, the
// record, the effect of each scope, the ack).
func stepRole(calls []string, k int) string {
	isEffect := func(c string) bool {
		return c == "index put" || c == "index upsert" || c == "notify"
	}
	cur := calls[k-1]
	var prev string
	if k > 1 {
		prev = calls[k-2]
	}
	effectsBefore := 0
	for _, c := range calls[:k-1] {
		if isEffect(c) {
			effectsBefore++
		}
	}
	switch {
	case k == 1:
		return "before the de-dupe check"
	case prev == "ack":
		return "after the ack"
	case cur == "ack" && effectsBefore > 0:
		return "between the last effect and the ack"
	case cur == "ack":
		return "before the ack"
	case isEffect(cur) && effectsBefore == 0:
		return "between the de-dupe record and the effect"
	case isEffect(cur) && isEffect(prev):
		return "between effects of different scopes"
	case isEffect(cur):
		return "between the next scope's record and its effect"
	case effectsBefore == 0:
		return "between the de-dupe check and the record"
	case isEffect(prev):
		return "between an effect and its record"
	}
	return "between effects of different scopes (the next scope's check)"
}
