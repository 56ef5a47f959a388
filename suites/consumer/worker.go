package consumer

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/sinks"
	"github.com/onceproof/tck/mq"
)

// worker is one member of the consumer group. It runs one instance at a
// time and starts a new one, on the same store file and a new broker
// connection, whenever its instance is lost.
type worker struct {
	h    *harness
	name string
}

// instance is one consumer instance and what it holds: its broker
// connection and its handle on the durable store.
type instance struct {
	h     *harness
	name  string
	c     co.Consumer
	mc    mq.Consumer
	store *sinks.SQLStore
	dead  atomic.Bool
	once  sync.Once
}

func (w *worker) run() {
	h := w.h
	defer h.wg.Done()
	var inst *instance
	defer func() {
		if inst != nil {
			h.kill(inst)
		}
	}()
	for h.ctx.Err() == nil {
		if inst == nil {
			var err error
			if inst, err = h.startInstance(w.name); err != nil {
				h.rec.Note(w.name, "start", "", "failed: "+err.Error())
				h.noteErr("starting an instance: " + err.Error())
				sleep(h.ctx, 50*time.Millisecond)
				continue
			}
		}
		ds, err := inst.mc.Fetch(h.ctx, 1, 100*time.Millisecond)
		if err != nil && h.ctx.Err() == nil {
			h.rec.Note(inst.name, "fetch", "", "error: "+err.Error())
			h.kill(inst)
			inst = nil
			sleep(h.ctx, 20*time.Millisecond)
			continue
		}
		for _, d := range ds {
			if !h.deliver(inst, d) {
				h.kill(inst)
				inst = nil
				break
			}
		}
	}
}

// sleep waits d or until ctx ends: a worker's back-off.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// startInstance opens a store handle and a broker connection and calls the
// target's factory with the kit's wrappers around them.
func (h *harness) startInstance(worker string) (inst *instance, err error) {
	name := fmt.Sprintf("%s#%d", worker, h.instances.Add(1))
	store, err := sinks.OpenStore(h.storePath, h.clock)
	if err != nil {
		return nil, err
	}
	mc, err := h.broker.Consumer(h.ctx, h.topic, mq.ConsumerConfig{Group: h.group, AckWait: h.clock.Real(h.tm.AckWait)})
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	inst = &instance{h: h, name: name, mc: mc, store: store}
	env := co.Env{Worker: name, Index: &kitIndex{inst}, Notifier: &kitNotifier{inst}, Store: &kitStore{inst}, Clock: h.clock}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the factory panicked: %v", p)
		}
		if err != nil {
			_ = mc.Close()
			_ = store.Close()
			inst = nil
		}
	}()
	c, err := h.t.New(h.ctx, env)
	if err != nil {
		return nil, fmt.Errorf("the factory failed: %w", err)
	}
	inst.c = c
	h.rec.Note(name, "start", "", "new instance")
	return inst, nil
}

// kill ends an instance as a crash would: it can make no further call (its
// wrappers panic), its broker connection closes with its deliveries still
// pending at the broker, and nothing of it is kept.
func (h *harness) kill(inst *instance) {
	inst.once.Do(func() {
		inst.dead.Store(true)
		_ = inst.mc.Close()
		_ = inst.store.Close()
	})
}

// handled is how one Handle call ended.
type handled struct {
	err   error
	crash *crash
	panic string
}

// deliver hands one delivery to the instance in a goroutine of its own and
// returns false when the instance is lost (crash, panic, blocked).
func (h *harness) deliver(inst *instance, d mq.Delivery) bool {
	m := d.Message()
	e, known := h.delivered(m.ID)
	if !known {
		// Not published by this rule: a stray; keep it away from the consumer.
		_ = d.Term(h.ctx)
		return true
	}
	h.rec.Note(inst.name, "deliver", m.ID, fmt.Sprintf("attempt %d", d.Attempt()))
	h.waitGate(e.EventID)
	kd := &kitDelivery{inst: inst, d: d, e: e, brokerID: m.ID}
	o, ok := h.handle(inst, kd)
	switch {
	case !ok:
		return false
	case o.crash != nil:
		h.rec.Note(inst.name, "crashed", m.ID, o.crash.String())
		return false
	case o.panic != "":
		h.rec.Note(inst.name, "panic", m.ID, firstLine(o.panic))
		h.mu.Lock()
		h.panics = append(h.panics, fmt.Sprintf("Handle(%s) by %s: %s", m.ID, inst.name, o.panic))
		h.mu.Unlock()
		return false
	case inst.dead.Load():
		// The consumer recovered the kit's crash itself; the instance is gone all the same.
		h.rec.Note(inst.name, "crashed", m.ID, "the consumer swallowed the crash; instance ended")
		return false
	case o.err != nil:
		h.rec.Note(inst.name, "error", m.ID, o.err.Error())
		h.noteErr(fmt.Sprintf("Handle(%s): %v", m.ID, o.err))
		if !kd.settled.Load() {
			_ = d.Nak(h.ctx, h.clock.Real(h.tm.NakDelay))
		}
	}
	return true
}

// handle runs Handle in a goroutine of its own, so a call that blocks past
// the handle deadline can be abandoned (ok false). Its context ends when
// handle returns, so a consumer that watches it returns too.
func (h *harness) handle(inst *instance, kd *kitDelivery) (o handled, ok bool) {
	h.inflight.Add(1)
	var left sync.Once
	leave := func() { left.Do(func() { h.inflight.Add(-1) }) }
	done := make(chan handled, 1)
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	h.handlers.Add(1)
	go func() {
		defer h.handlers.Done()
		var o handled
		defer func() {
			if p := recover(); p != nil {
				if c, ok := p.(crash); ok {
					o.crash = &c
				} else {
					o.panic = fmt.Sprintf("%v\n%s", p, debug.Stack())
				}
			}
			leave()
			done <- o
		}()
		o.err = inst.c.Handle(ctx, kd)
	}()
	timer := time.NewTimer(h.tm.HandleDeadline)
	defer timer.Stop()
	select {
	case o = <-done:
		return o, true
	case <-timer.C:
		msg := fmt.Sprintf("Handle(%s) by %s did not return within %s", kd.brokerID, inst.name, h.tm.HandleDeadline)
		h.rec.Note(inst.name, "blocked", kd.brokerID, msg)
		h.mu.Lock()
		h.blocked = append(h.blocked, msg)
		h.mu.Unlock()
		leave() // the goroutine is abandoned; the dead instance can no longer touch a sink
		return o, false
	case <-h.ctx.Done():
		return o, false
	}
}

func (h *harness) noteErr(msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.errs = append(h.errs, msg)
}
