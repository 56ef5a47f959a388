package consumer

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/mq"
)

// The kit's wrappers are all a consumer instance sees of the broker and the
// sinks. Each records its call in the history and is a place where the kit
// can end the instance (instance.enter, instance.leave), before and after
// the real call. Ending it never panics: the call returns co.ErrEnded, and
// so does every later call of the instance.

// kitDelivery is a delivery as the consumer sees it: its ack may be lost by
// the kit or crash around it.
type kitDelivery struct {
	inst     *instance
	d        mq.Delivery
	e        co.Event
	brokerID string
	settled  atomic.Bool
	// ackFailed: the kit failed its ack, so a Handle error is the right answer.
	ackFailed atomic.Bool
	calls     // what it called, and the effect calls that failed and were not called again
}

func (k *kitDelivery) Event() co.Event { return k.e }
func (k *kitDelivery) Attempt() int    { return k.d.Attempt() }

func (k *kitDelivery) Ack(ctx context.Context) error {
	h, inst := k.inst.h, k.inst
	n, err := inst.enter(k, "ack", beforeAck, k.e.EventID, "")
	if err != nil {
		return err
	}
	k.settled.Store(true)
	if left := k.left(); len(left) > 0 {
		h.ackedAfterFailure(inst.name, k.brokerID, left)
	}
	fk, failing := h.takeAckFault(k.e.EventID)
	switch {
	case failing && fk == faultError:
		k.ackFailed.Store(true)
		err := ackError(fk)
		h.rec.Note(inst.name, "ack", k.brokerID, "failed by the kit: "+err.Error())
		if lerr := inst.leave(k, n, "ack", "", k.e.EventID, ""); lerr != nil {
			return lerr
		}
		return err
	case h.takeLostAck(k.e.EventID):
		h.rec.Note(inst.name, "ack", k.brokerID, "lost by the kit: the broker never sees it")
	default:
		op := h.rec.Invoke(inst.name, "ack", k.brokerID)
		if err := k.d.Ack(ctx); err != nil {
			op.Info(err.Error())
			if inst.dead.Load() {
				return co.ErrEnded
			}
			return err
		}
		op.OK("confirmed")
		h.markAcked(k.brokerID)
		if failing {
			k.ackFailed.Store(true)
			err := ackError(fk)
			h.rec.Note("kit", "lose answer", k.brokerID, "the broker took the ack; the consumer gets a deadline error")
			if lerr := inst.leave(k, n, "ack", afterAck, k.e.EventID, ""); lerr != nil {
				return lerr
			}
			return err
		}
	}
	return inst.leave(k, n, "ack", afterAck, k.e.EventID, "")
}

func (k *kitDelivery) Nak(ctx context.Context, delay time.Duration) error {
	h, inst := k.inst.h, k.inst
	n, err := inst.enter(k, "nak", "", k.e.EventID, "")
	if err != nil {
		return err
	}
	k.settled.Store(true)
	op := h.rec.Invoke(inst.name, "nak", k.brokerID)
	if err := k.d.Nak(ctx, h.clock.Real(delay)); err != nil {
		op.Info("delay " + delay.String() + " (seed time): " + err.Error())
		return err
	}
	op.OK("delay " + delay.String() + " (seed time)")
	return inst.leave(k, n, "nak", "", k.e.EventID, "")
}

// kitIndex is the kit's index behind an instance's crash points and
// failures.
type kitIndex struct{ inst *instance }

func (x *kitIndex) write(action string, doc co.Doc, f func() (bool, error)) (bool, error) {
	inst := x.inst
	h, ev, kd := inst.h, co.EventID(doc.ID, doc.Version), inst.current()
	n, err := inst.enter(kd, action, beforeEffect, ev, co.ScopeIndex)
	if err != nil {
		return false, err
	}
	fk, failing := h.takeFault(ev, co.ScopeIndex)
	op := h.rec.Invoke(inst.name, action, ev)
	var applied bool
	switch {
	case failing && fk == faultError:
		err = injected(fk, co.ScopeIndex)
	default:
		applied, err = f()
	}
	switch {
	case err != nil:
		op.Info(err.Error())
	case applied:
		op.OK("written")
	default:
		op.OK("not applied")
	}
	if failing && fk == faultTimeout && err == nil {
		applied, err = false, injected(fk, co.ScopeIndex)
		h.rec.Note("kit", "lose answer", ev, "the index write took effect; the consumer gets a deadline error")
	}
	if err == nil || failing {
		h.sawEffect(ev)
	}
	settleDoubt(inst.currentFor(ev), co.ScopeIndex, failing)
	if lerr := inst.leave(kd, n, action, afterEffect, ev, co.ScopeIndex); lerr != nil {
		return applied, lerr
	}
	return applied, err
}

// settleDoubt notes on the delivery whether the scope's effect call
// failed, or the consumer called the scope again.
func settleDoubt(kd *kitDelivery, scope string, failing bool) {
	if kd != nil {
		kd.effect(scope, failing)
	}
}

func (x *kitIndex) Put(ctx context.Context, doc co.Doc) error {
	_, err := x.write("index put", doc, func() (bool, error) { return true, x.inst.h.index.Put(ctx, doc) })
	return err
}

func (x *kitIndex) Upsert(ctx context.Context, doc co.Doc) (bool, error) {
	return x.write("index upsert", doc, func() (bool, error) { return x.inst.h.index.Upsert(ctx, doc) })
}

// Get answers after the read latency: the read happened when the call
// began, as with a remote index, so the answer can be stale by the time it
// arrives.
func (x *kitIndex) Get(ctx context.Context, id string) (co.Doc, bool, error) {
	inst, kd := x.inst, x.inst.current()
	n, err := inst.enter(kd, "index get", "", "", "")
	if err != nil {
		return co.Doc{}, false, err
	}
	d, ok, err := inst.h.index.Get(ctx, id)
	inst.h.readLatency(ctx)
	if kd != nil && kd.e.MessageID == id {
		settleDoubt(kd, co.ScopeIndex, false)
	}
	if lerr := inst.leave(kd, n, "index get", "", "", ""); lerr != nil {
		return co.Doc{}, false, lerr
	}
	return d, ok, err
}

// kitNotifier is the kit's notifier behind an instance's crash points and
// failures.
type kitNotifier struct{ inst *instance }

func (nt *kitNotifier) Send(ctx context.Context, msg co.Notification) error {
	inst := nt.inst
	h, ev, kd := inst.h, co.EventID(msg.MessageID, msg.Version), inst.current()
	n, err := inst.enter(kd, "notify", beforeEffect, ev, co.ScopeNotify)
	if err != nil {
		return err
	}
	fk, failing := h.takeFault(ev, co.ScopeNotify)
	op := h.rec.Invoke(inst.name, "notify", ev)
	if failing && fk == faultError {
		err = injected(fk, co.ScopeNotify)
	} else {
		err = h.notifier.Send(ctx, msg)
	}
	if err != nil {
		op.Info(err.Error())
	} else {
		op.OK("sent")
	}
	if failing && fk == faultTimeout && err == nil {
		err = injected(fk, co.ScopeNotify)
		h.rec.Note("kit", "lose answer", ev, "the notification went out; the consumer gets a deadline error")
	}
	if err == nil || failing {
		h.sawEffect(ev)
	}
	settleDoubt(inst.currentFor(ev), co.ScopeNotify, failing)
	if lerr := inst.leave(kd, n, "notify", afterEffect, ev, co.ScopeNotify); lerr != nil {
		return lerr
	}
	return err
}

func (nt *kitNotifier) Sent(ctx context.Context, messageID string, version int) (int, error) {
	inst, kd := nt.inst, nt.inst.current()
	n, err := inst.enter(kd, "notify sent?", "", "", "")
	if err != nil {
		return 0, err
	}
	c, err := inst.h.notifier.Sent(ctx, messageID, version)
	inst.h.readLatency(ctx)
	if kd != nil && kd.e.MessageID == messageID && kd.e.Version == version {
		settleDoubt(kd, co.ScopeNotify, false)
	}
	if lerr := inst.leave(kd, n, "notify sent?", "", "", ""); lerr != nil {
		return 0, lerr
	}
	return c, err
}

// kitStore passes through to the instance's own handle; an ended instance
// can no longer read or write. In a rule with a flaky plan (CO-2.7) a call
// made for a delivery can fail: an error before it is applied, or, for a
// write, a deadline error after it was (the answer was lost).
type kitStore struct{ inst *instance }

func (s *kitStore) call(label string, f func() error) error {
	inst, kd := s.inst, s.inst.current()
	n, err := inst.enter(kd, label, "", "", "")
	if err != nil {
		return err
	}
	var fk faultKind
	failing := false
	event := ""
	if kd != nil && !kd.settled.Load() {
		// Only a call made while its delivery is in flight is charged to
		// it: after the ack, the call is no longer that delivery's.
		event = kd.e.EventID
		fk, failing = inst.h.takeCallFault(event, label)
	}
	switch {
	case failing && fk == faultError:
		err = fmt.Errorf("onceproof: the de-dupe store is unavailable (the kit failed this %s; it was not applied)", label)
		inst.h.rec.Note(inst.name, label, event, "failed by the kit: not applied")
	default:
		err = f()
		if failing && err == nil {
			err = fmt.Errorf("onceproof: no answer from the de-dupe store within its deadline (the kit lost the answer; the %s was applied): %w", label, context.DeadlineExceeded)
			inst.h.rec.Note(inst.name, label, event, "applied; the answer lost by the kit: a deadline error")
		}
	}
	if failing {
		kd.failedStore()
	}
	if lerr := inst.leave(kd, n, label, "", "", ""); lerr != nil {
		return lerr
	}
	return err
}

// Get answers after the read latency, like the index's.
func (s *kitStore) Get(ctx context.Context, key string) (r co.Record, ok bool, err error) {
	err = s.call("store get", func() (err error) {
		r, ok, err = s.inst.store.Get(ctx, key)
		s.inst.h.readLatency(ctx)
		return err
	})
	return r, ok, err
}

func (s *kitStore) Insert(ctx context.Context, key, value string, ttl time.Duration) (ok bool, err error) {
	err = s.call("store insert", func() (err error) { ok, err = s.inst.store.Insert(ctx, key, value, ttl); return err })
	return ok, err
}

func (s *kitStore) Put(ctx context.Context, key, value string, ttl time.Duration) error {
	return s.call("store put", func() error { return s.inst.store.Put(ctx, key, value, ttl) })
}

func (s *kitStore) CompareAndSwap(ctx context.Context, key, old, value string, ttl time.Duration) (ok bool, err error) {
	err = s.call("store compare-and-swap", func() (err error) {
		ok, err = s.inst.store.CompareAndSwap(ctx, key, old, value, ttl)
		return err
	})
	return ok, err
}

func (s *kitStore) Delete(ctx context.Context, key string) error {
	return s.call("store delete", func() error { return s.inst.store.Delete(ctx, key) })
}

// enter is every kit wrapper's first step. A call by an ended instance is
// refused (ErrEnded) and recorded as "after death"; otherwise the call is
// counted for the delivery kd it belongs to (nil: none, e.g. a factory or
// Reconcile call), and a tripwire for it, or for pt, ends the instance
// here, before the call. It returns the call's number in its delivery.
func (inst *instance) enter(kd *kitDelivery, label string, pt point, event, scope string) (int, error) {
	h := inst.h
	if inst.dead.Load() {
		h.afterDeath(inst, label, event)
		return 0, co.ErrEnded
	}
	h.sawCall()
	n, delivery := 0, ""
	if kd != nil {
		n, delivery = kd.count(label), kd.e.EventID
	}
	return n, inst.tripAround(true, delivery, n, label, pt, event, scope)
}

// leave is every kit wrapper's last step, after the real call: an instance
// ended meanwhile gets ErrEnded (what it did took effect all the same); a
// tripwire for call n, or for pt, ends the instance here.
func (inst *instance) leave(kd *kitDelivery, n int, label string, pt point, event, scope string) error {
	if inst.dead.Load() {
		return co.ErrEnded
	}
	delivery := ""
	if kd != nil {
		delivery = kd.e.EventID
	}
	return inst.tripAround(false, delivery, n, label, pt, event, scope)
}

// tripAround ends the instance at a tripwire of the call, if one fires.
func (inst *instance) tripAround(before bool, delivery string, n int, label string, pt point, event, scope string) error {
	why, about := inst.h.tripAround(before, delivery, n, label, pt, event, scope)
	if why == "" {
		return nil
	}
	inst.h.crash(inst, why, about)
	return co.ErrEnded
}

// afterDeath records a call an ended instance still made (a goroutine of
// the consumer that went on); the kit refused it.
func (h *inproc) afterDeath(inst *instance, label, event string) {
	h.mu.Lock()
	h.refused++
	h.mu.Unlock()
	h.rec.Note(inst.name, "after death", event, label+" refused")
}
