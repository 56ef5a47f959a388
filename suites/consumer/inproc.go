package consumer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/leftovers"
	"github.com/onceproof/tck/internal/sinks"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/mq"
)

// workers is how many group members every in-process rule runs: a
// redelivery after a crash may go to either, as in production.
const workers = 2

// inproc is the in-process transport: a fresh topic on the target's broker
// (an embedded NATS server of the rule's own when the target names none),
// fresh sinks and a fresh store file, workers in one consumer group, each
// running one instance of the consumer at a time behind the kit's wrappers
// (inproc_calls.go), where a crash ends the instance.
type inproc struct {
	*world
	tm Timing

	broker    mq.Broker
	topic     string
	group     string
	clock     *sinks.Scaled
	now       *calendarClock // what the consumer and the sinks read: clock, from a drawn instant
	index     *sinks.MemIndex
	notifier  *sinks.MemNotifier
	dir       string
	storePath string
	openStore func(path string, clock co.Clock) (sinks.Store, error)

	reconciled int // crashes already followed by a Reconcile

	// Under world.mu:
	panics    []string
	blocked   []string
	startErrs []string // factory errors, panics and blocked calls
	faultErrs int      // Handle errors after a sink call the kit failed: expected
	refused   int      // calls by ended instances

	instances atomic.Int32
	inflight  atomic.Int32
	starting  atomic.Int32   // instances being started
	wg        sync.WaitGroup // the workers
	handlers  sync.WaitGroup // the Handle calls, abandoned ones included
}

// openInproc builds the world for the rule r runs and starts the workers.
// Everything is released by r's cleanups: the workers end, the topic is
// deleted, the broker handle and the files go.
func openInproc(r *spec.R, t Target, o openOpts) *inproc {
	tm := t.Timing.withDefaults()
	// Tracked, not only marked: a rule body abandoned at its deadline may
	// never run its cleanups, and the process's exit must still remove it.
	dir, removeDir, err := leftovers.TempDir("onceproof-" + r.ID + "-")
	if err != nil {
		r.Unknown("making a scratch directory: %v", err)
	}
	r.DeferCleanup(func() { _ = removeDir() })
	open := t.Broker
	if open == nil {
		_, open = embeddedURL(r, t) // stopped after the world's cleanup, which deletes the topic on it
	}
	b, err := open(r.Context())
	if err != nil {
		r.Unknown("the broker could not be opened: %v", err)
	}
	ctx, cancel := context.WithCancel(r.Context())
	clock := sinks.NewScaled(tm.Scale)
	w := newWorld(r, t, ctx)
	h := &inproc{
		world: w, tm: tm,
		broker: b, topic: "co-" + strings.ReplaceAll(w.tag, ".", "-"), group: "consumer",
		clock: clock,
		dir:   dir, storePath: filepath.Join(dir, "consumer-store.db"),
	}
	h.now = w.startClock(clock, o.midnight)
	if h.openStore = t.hooks.Store; h.openStore == nil {
		mem := sinks.NewMemStore(h.now)
		h.openStore = func(string, co.Clock) (sinks.Store, error) { return mem, nil }
	}
	w.clockNow, w.scale = h.now.Now, tm.Scale
	latency := tm.NotifyLatency
	if o.quickNotify {
		latency = 0
	}
	h.index, h.notifier = sinks.NewIndex(h.now), sinks.NewNotifier(h.now, latency)
	w.tr = h
	w.words = wording{who: "consumer", settle: tm.Settle, poll: 2 * time.Millisecond, redeliver: clock.Real(tm.AckWait)}
	r.DeferCleanup(func() { w.close(cancel) })
	if err := b.CreateTopic(r.Context(), h.topic, mq.TopicConfig{Retention: mq.Limits}); err != nil {
		r.Unknown("creating topic %s: %v", h.topic, err)
	}
	h.ev.Figure("clock scale", fmt.Sprintf("x%.0f (a seed minute is %s real)", tm.Scale, clock.Real(time.Minute)), "")
	h.ev.Figure("broker ack wait", fmt.Sprintf("%s seed = %s real", tm.AckWait, clock.Real(tm.AckWait)), "")
	for i := 1; i <= workers; i++ {
		h.wg.Add(1)
		go h.work(fmt.Sprintf("W%d", i))
	}
	return h
}

func (h *inproc) send(e co.Event, brokerID string) (string, bool, error) {
	ack, err := h.broker.Publish(h.ctx, h.topic, co.Message(e, brokerID))
	return ack.Position, ack.Duplicate, err
}

// quiet: no Handle call in flight and no instance starting (a slot's next
// instance may resume work its predecessor left, as a task queue does).
func (h *inproc) quiet() bool { return h.inflight.Load() == 0 && h.starting.Load() == 0 }

// handling: a Handle is running and none has outlived its deadline yet (a
// consumer that blocks is told apart by unsettled, not waited for).
func (h *inproc) handling() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.inflight.Load() > 0 && len(h.blocked) == 0
}

// unsettled: a consumer that blocked is unknown (the deadline is the
// evidence), one that panicked or returned errors fails with the panic or
// error.
func (h *inproc) unsettled(waiting []string) {
	h.expectStarts()
	h.mu.Lock()
	blocked, panics := append([]string(nil), h.blocked...), append([]string(nil), h.panics...)
	h.mu.Unlock()
	errs := h.consumerErrs()
	if len(blocked) > 0 {
		h.ev.Notef("deadline: %s", blocked[0])
		h.r.Unknown("the consumer blocked: %s; %d message(s) never acked", blocked[0], len(waiting))
	}
	if len(panics) > 0 {
		h.ev.Notef("panic: %s", panics[0])
		h.r.Expect(panics).To(gomega.BeEmpty(), "the consumer panicked on a delivery (%d panics, instance lost each time): %s",
			len(panics), firstLine(panics[0]))
	}
	if len(errs) > 0 {
		h.r.Expect(errs).To(gomega.BeEmpty(), "the consumer returned an error for %d deliveries and never acked %s: %s",
			len(errs), strings.Join(waiting, ", "), errs[len(errs)-1])
	}
	if len(waiting) == 0 {
		h.r.Unknown("a Handle call was still running after %s", h.tm.Settle)
	}
}

func (h *inproc) stepped() {}

// expectStarts fails the rule when the target's factory failed to build
// an instance (an error, a panic) and makes it unknown when the factory
// did not return: a consumer error of the rule, with the first one named,
// never a crash of the test binary nor a hang of the rule.
func (h *inproc) expectStarts() {
	h.mu.Lock()
	errs := append([]string(nil), h.startErrs...)
	h.mu.Unlock()
	if len(errs) == 0 {
		return
	}
	h.ev.Figure("instances the factory failed to start", len(errs), "")
	h.ev.Notef("factory: %s", errs[0])
	if strings.Contains(errs[0], "did not return within") {
		h.r.Unknown("the consumer's factory blocked: %s", errs[0])
	}
	h.r.Expect(errs).To(gomega.BeEmpty(), "the consumer's factory failed to start an instance %d time(s): %s", len(errs), errs[0])
}

// judging calls Reconcile on a fresh instance after crashes, if the
// consumer has one (seed 002, 三: 除非另有对账/重建).
func (h *inproc) judging() {
	h.expectStarts()
	h.mu.Lock()
	crashed := h.crashes > h.reconciled
	h.reconciled = h.crashes
	h.mu.Unlock()
	if crashed {
		if rc := h.reconcile(); rc != "" {
			h.ev.Notef("after the crashes, before judging: %s", rc)
		}
	}
}

func (h *inproc) observed() ([]sinks.Effect, map[string]co.Doc) {
	return append(h.index.Effects(), h.notifier.Effects()...), h.index.Docs()
}

// An instance ends only at the kit's wrappers: a kill anywhere else would
// be a panic through the consumer's goroutines.
func (h *inproc) killsAnywhere() bool             { return false }
func (h *inproc) kill(*anyKill, string)           {}
func (h *inproc) twoAtOnce() string               { return "" }
func (h *inproc) readLatency(ctx context.Context) { sleep(ctx, h.tm.ReadLatency) }

// stop waits for the workers and the Handle calls still running.
func (h *inproc) stop() {
	h.wg.Wait()
	h.waitHandlers()
	h.ev.Figure("consumer instances started", int(h.instances.Load()), "")
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.faultsFired > 0 {
		h.ev.Figure("Handle errors after a failed sink call", h.faultErrs, "expected (a de-dupe store call the kit failed counts too)")
	}
	h.ev.Figure("calls refused after death", h.refused, "calls by instances the kit had ended")
}

// release deletes the topic (the rule's context may be over) and closes
// the broker handle.
func (h *inproc) release() {
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	_ = h.broker.DeleteTopic(ctx, h.topic)
	_ = h.broker.Close()
}

// waitHandlers waits a handle deadline for Handle calls still running: the
// rule's context has ended, so a consumer that watches it returns. One that
// does not is noted; its goroutine is the consumer's, and it stays.
func (h *inproc) waitHandlers() {
	done := make(chan struct{})
	go func() { h.handlers.Wait(); close(done) }()
	t := time.NewTimer(h.tm.HandleDeadline)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		h.ev.Notef("a Handle call ignored the end of its context and was still running when the rule ended")
	}
}

// instance is one consumer instance and what it holds: its broker
// connection and its handle on the durable store.
type instance struct {
	h      *inproc
	name   string
	c      co.Consumer
	mc     mq.Consumer
	store  sinks.Store
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

// currentFor is the current delivery if it is of event, else nil: an
// effect call a worker of the consumer's own makes after the ack (a task
// queue) belongs to no delivery in flight, and its failure must not be
// charged to one.
func (inst *instance) currentFor(event string) *kitDelivery {
	if kd := inst.current(); kd != nil && kd.e.EventID == event {
		return kd
	}
	return nil
}

// work is one member of the consumer group: it runs one instance at a
// time and starts a new one, on the same store file and a new broker
// connection, whenever its instance is lost.
func (h *inproc) work(name string) {
	defer h.wg.Done()
	var inst *instance
	defer func() {
		if inst != nil {
			h.end(inst)
		}
	}()
	for h.ctx.Err() == nil {
		if inst != nil && inst.dead.Load() {
			// Ended at a call of a goroutine of the consumer's own (a
			// worker draining its queue): start the next one now.
			inst = nil
		}
		if inst == nil {
			var err error
			if inst, err = h.startInstance(name); err != nil {
				if h.ctx.Err() != nil {
					return // the rule is over; not the consumer's error
				}
				h.rec.Note(name, "start", "", "failed: "+err.Error())
				h.noteErr("starting an instance: " + err.Error())
				if fe := (*factoryError)(nil); errors.As(err, &fe) {
					h.mu.Lock()
					h.startErrs = append(h.startErrs, fe.msg)
					h.mu.Unlock()
				}
				sleep(h.ctx, 50*time.Millisecond)
				continue
			}
		}
		ds, err := h.fetch(inst)
		if inst.dead.Load() {
			continue // ended meanwhile: what it fetched stays pending at the broker
		}
		if err != nil && h.ctx.Err() == nil {
			h.rec.Note(inst.name, "fetch", "", "error: "+err.Error())
			h.end(inst)
			inst = nil
			sleep(h.ctx, 20*time.Millisecond)
			continue
		}
		for _, d := range ds {
			if !h.deliver(inst, d) {
				h.end(inst)
				inst = nil
				break
			}
		}
	}
}

// fetch fetches one delivery for inst, or returns at once when inst ends
// meanwhile (a crash at a call of a goroutine of the consumer's own): a
// fetch on a closed connection can take a second to give up, and the slot
// must get its next instance at once, as a restarted process would.
func (h *inproc) fetch(inst *instance) ([]mq.Delivery, error) {
	type fetched struct {
		ds  []mq.Delivery
		err error
	}
	done := make(chan fetched, 1)
	h.handlers.Add(1)
	go func() {
		defer h.handlers.Done()
		ds, err := inst.mc.Fetch(h.ctx, 1, 100*time.Millisecond)
		done <- fetched{ds, err}
	}()
	select {
	case f := <-done:
		return f.ds, f.err
	case <-inst.gone:
		return nil, nil
	}
}

// factoryError is a start that failed in the target's factory (an error,
// a panic, or a call that did not return): the consumer's error, unlike a
// store or broker handle the kit could not open.
type factoryError struct{ msg string }

func (e *factoryError) Error() string { return e.msg }

// startInstance opens a store handle and a broker connection and calls the
// target's factory with the kit's wrappers around them. A factory that
// errs, panics or does not return within the handle deadline is a
// *factoryError; the instance's handles are closed either way.
func (h *inproc) startInstance(worker string) (*instance, error) {
	name := fmt.Sprintf("%s#%d", worker, h.instances.Add(1))
	h.starting.Add(1)
	defer func() { h.sawCall(); h.starting.Add(-1) }()
	store, err := h.openStore(h.storePath, h.now)
	if err != nil {
		return nil, err
	}
	mc, err := h.broker.Consumer(h.ctx, h.topic, mq.ConsumerConfig{Group: h.group, AckWait: h.clock.Real(h.tm.AckWait)})
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	ictx, cancel := context.WithCancel(h.ctx)
	inst := &instance{h: h, name: name, mc: mc, store: store, ctx: ictx, cancel: cancel, gone: make(chan struct{})}
	env := co.Env{Worker: name, Rule: h.r.ID, Index: &kitIndex{inst}, Notifier: &kitNotifier{inst}, Store: &kitStore{inst}, Clock: h.now}
	var c co.Consumer
	ferr := h.bounded(ictx, "the factory", func() (err error) {
		c, err = h.t.New(ictx, env)
		switch {
		case err != nil:
			return fmt.Errorf("the factory returned an error: %w", err)
		case c == nil:
			return errors.New("the factory returned no consumer and no error")
		}
		return nil
	})
	if ferr != nil {
		h.end(inst)
		return nil, &factoryError{msg: fmt.Sprintf("%s: %v", name, ferr)}
	}
	inst.c = c
	h.rec.Note(name, "start", "", "new instance")
	return inst, nil
}

// bounded runs a call of the consumer's own (its factory, its Reconcile)
// in a goroutine, so a panic in it is its error and a call that does not
// return within the handle deadline (counted in the kit's scheduled time)
// is abandoned with an error saying so: never a crash of the test binary
// nor a worker stuck for the rest of the rule.
func (h *inproc) bounded(ctx context.Context, what string, f func() error) error {
	done := make(chan error, 1)
	h.handlers.Add(1)
	go func() {
		defer h.handlers.Done()
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("%s panicked: %v", what, p)
			}
		}()
		done <- f()
	}()
	timer := time.NewTimer(h.tm.HandleDeadline)
	defer timer.Stop()
	start := time.Now()
	for {
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return fmt.Errorf("%s was abandoned: the rule ended", what)
		case <-timer.C:
			if over, left := overdue(start, h.tm.HandleDeadline); !over {
				timer.Reset(left)
				continue
			}
			msg := fmt.Sprintf("%s did not return within %s", what, h.tm.HandleDeadline)
			h.mu.Lock()
			h.blocked = append(h.blocked, msg)
			h.mu.Unlock()
			return errors.New(msg)
		}
	}
}

// end ends an instance as a crash would: its context is cancelled, it can
// make no further call (its wrappers refuse them with co.ErrEnded), its
// broker connection closes with its deliveries still pending at the broker,
// and nothing of it is kept. It never panics in the consumer's goroutines.
func (h *inproc) end(inst *instance) {
	inst.once.Do(func() {
		inst.dead.Store(true)
		inst.cancel()
		close(inst.gone)
		_ = inst.mc.Close()
		_ = inst.store.Close()
	})
}

// crash ends inst at a tripwire: counted, recorded, then ended.
func (h *inproc) crash(inst *instance, why, event string) {
	h.crashed()
	h.rec.Note(inst.name, "crash", event, why)
	h.end(inst)
}

// handled is how one Handle call ended.
type handled struct {
	err   error
	ended bool // the kit ended the instance during the call
	panic string
}

// deliver hands one delivery to the instance in a goroutine of its own and
// returns false when the instance is lost (crash, panic, blocked).
func (h *inproc) deliver(inst *instance, d mq.Delivery) bool {
	m := d.Message()
	e, _, known := h.delivered(m.ID)
	if !known {
		// Not published by this rule: a stray; keep it away from the consumer.
		_ = d.Term(h.ctx)
		return true
	}
	h.sawCall()
	h.rec.Note(inst.name, "deliver", m.ID, fmt.Sprintf("attempt %d", d.Attempt()))
	h.waitGate(e.EventID)
	kd := &kitDelivery{inst: inst, d: d, e: e, brokerID: m.ID}
	h.firstDelivery(e.EventID, &kd.calls)
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
		if kd.faulted() || kd.ackFailed.Load() {
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
func (h *inproc) handle(inst *instance, kd *kitDelivery) (o handled, ok bool) {
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
}

// reconcile calls Reconcile on a fresh instance, if the consumer has one,
// and returns what it did ("" when the consumer has no Reconcile).
func (h *inproc) reconcile() (out string) {
	inst, err := h.startInstance("reconciler")
	// The kit's own connection to the broker failing (a connect that timed
	// out while the kit was paused) is tried again; the factory's own
	// error is the consumer's and is not.
	for try := 1; err != nil && try < 3 && h.ctx.Err() == nil; try++ {
		if fe := (*factoryError)(nil); errors.As(err, &fe) {
			break
		}
		sleep(h.ctx, 200*time.Millisecond)
		inst, err = h.startInstance("reconciler")
	}
	if fe := (*factoryError)(nil); errors.As(err, &fe) {
		h.mu.Lock()
		h.startErrs = append(h.startErrs, fe.msg)
		h.mu.Unlock()
		h.expectStarts()
	}
	if err != nil {
		h.r.Unknown("starting an instance to reconcile: %v", err)
	}
	defer h.end(inst)
	rc, ok := inst.c.(co.Reconciler)
	if !ok {
		return ""
	}
	op := h.rec.Invoke(inst.name, "reconcile", "")
	if err := h.bounded(inst.ctx, "Reconcile", func() error { return rc.Reconcile(inst.ctx) }); err != nil {
		op.Info(err.Error())
		return "Reconcile on a fresh instance failed: " + err.Error()
	}
	op.OK("done")
	return "Reconcile ran on a fresh instance"
}
