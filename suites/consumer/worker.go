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
	h      *harness
	name   string
	c      co.Consumer
	mc     mq.Consumer
	store  *sinks.SQLStore
	ctx    context.Context // the factory's and every Handle's; cancelled when the instance ends
	cancel context.CancelFunc
	gone   chan struct{} // closed when the instance ends
	dead   atomic.Bool
	once   sync.Once
	cur    atomic.Pointer[kitDelivery] // the delivery it handles (or handled last)
}

// current is the delivery the instance's calls are counted for: the one it
// was handed last (a consumer that works in goroutines of its own may still
// be on it after Handle returned).
func (inst *instance) current() *kitDelivery { return inst.cur.Load() }

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
				if h.ctx.Err() != nil {
					return // the rule is over; not the consumer's error
				}
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
	ictx, cancel := context.WithCancel(h.ctx)
	inst = &instance{h: h, name: name, mc: mc, store: store, ctx: ictx, cancel: cancel, gone: make(chan struct{})}
	env := co.Env{Worker: name, Rule: h.r.ID, Index: &kitIndex{inst}, Notifier: &kitNotifier{inst}, Store: &kitStore{inst}, Clock: h.clock}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the factory panicked: %v", p)
		}
		if err != nil {
			h.kill(inst)
			inst = nil
		}
	}()
	c, err := h.t.New(ictx, env)
	if err != nil {
		return nil, fmt.Errorf("the factory failed: %w", err)
	}
	inst.c = c
	h.rec.Note(name, "start", "", "new instance")
	return inst, nil
}

// kill ends an instance as a crash would: its context is cancelled, it can
// make no further call (its wrappers refuse them with co.ErrEnded), its
// broker connection closes with its deliveries still pending at the broker,
// and nothing of it is kept. It never panics in the consumer's goroutines.
func (h *harness) kill(inst *instance) {
	inst.once.Do(func() {
		inst.dead.Store(true)
		inst.cancel()
		close(inst.gone)
		_ = inst.mc.Close()
		_ = inst.store.Close()
	})
}

// handled is how one Handle call ended.
type handled struct {
	err   error
	ended bool // the kit ended the instance during the call
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
	h.firstDelivery(kd)
	inst.cur.Store(kd)
	o, ok := h.handle(inst, kd)
	switch {
	case !ok:
		return false
	case o.ended || inst.dead.Load():
		// The kit ended the instance; whatever Handle returned, it is gone.
		return false
	case o.panic != "":
		h.rec.Note(inst.name, "panic", m.ID, firstLine(o.panic))
		h.mu.Lock()
		h.panics = append(h.panics, fmt.Sprintf("Handle(%s) by %s: %s", m.ID, inst.name, o.panic))
		h.mu.Unlock()
		return false
	case o.err != nil:
		h.rec.Note(inst.name, "error", m.ID, o.err.Error())
		if kd.doubt.faulted() {
			// The kit failed a sink call of this delivery: an error is the right answer.
			h.mu.Lock()
			h.faultErrs++
			h.mu.Unlock()
		} else {
			h.noteErr(fmt.Sprintf("Handle(%s): %v", m.ID, o.err))
		}
		if !kd.settled.Load() {
			_ = d.Nak(h.ctx, h.clock.Real(h.tm.NakDelay))
		}
	}
	return true
}

// handle runs Handle in a goroutine of its own, so a call that blocks past
// the handle deadline can be abandoned (ok false), and so can one whose
// instance the kit ended (o.ended): a process that crashed does not finish
// its call. Its context ends when handle returns, so a consumer that watches
// it returns too.
func (h *harness) handle(inst *instance, kd *kitDelivery) (o handled, ok bool) {
	h.inflight.Add(1)
	var left sync.Once
	leave := func() { left.Do(func() { h.inflight.Add(-1) }) }
	done := make(chan handled, 1)
	ctx, cancel := context.WithCancel(inst.ctx)
	defer cancel()
	h.handlers.Add(1)
	go func() {
		defer h.handlers.Done()
		var o handled
		defer func() {
			if p := recover(); p != nil {
				o.panic = fmt.Sprintf("%v\n%s", p, debug.Stack())
			}
			leave()
			done <- o
		}()
		o.err = inst.c.Handle(ctx, kd)
	}()
	timer := time.NewTimer(h.tm.HandleDeadline)
	defer timer.Stop()
	start := time.Now()
	for {
		select {
		case o = <-done:
			return o, true
		case <-inst.gone:
			leave() // the crashed call is abandoned; it can touch nothing any more
			return handled{ended: true}, true
		case <-timer.C:
			if over, left := overdue(start, h.tm.HandleDeadline); !over {
				// The kit was paused: the call has not had its time yet.
				timer.Reset(left)
				continue
			}
		case <-h.ctx.Done():
			return o, false
		}
		msg := fmt.Sprintf("Handle(%s) by %s did not return within %s", kd.brokerID, inst.name, h.tm.HandleDeadline)
		h.rec.Note(inst.name, "blocked", kd.brokerID, msg)
		h.mu.Lock()
		h.blocked = append(h.blocked, msg)
		h.mu.Unlock()
		leave() // the goroutine is abandoned; the dead instance can no longer touch a sink
		return o, false
	}
}

func (h *harness) noteErr(msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.errs = append(h.errs, msg)
}
