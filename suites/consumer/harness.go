package consumer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/sinks"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// Point is a place in a consumer's handling where the kit can end the
// instance. The kit owns every such place: they are its own sink and ack
// wrappers, so no cooperation of the consumer is needed.
type Point string

const (
	BeforeEffect Point = "before-effect" // just before a sink call (index write or notification)
	AfterEffect  Point = "after-effect"  // just after a sink call returned
	BeforeAck    Point = "before-ack"    // just before the ack reaches the broker
	AfterAck     Point = "after-ack"     // just after the broker confirmed the ack
	BeforePub    Point = "before-publish"
	AfterPub     Point = "after-publish"
)

// crash is the sentinel a kit wrapper panics with, inside the consumer's
// goroutine, to end an instance. The worker recovers it, closes the
// instance's broker connection and store handle and drops the instance: its
// memory is gone, as after a process crash.
type crash struct {
	Point Point
	Event string
	Scope string
	Stale bool // a call by an instance that was already ended
}

func (c crash) String() string {
	if c.Stale {
		return "call by an ended instance"
	}
	s := fmt.Sprintf("crash %s %s", c.Point, c.Event)
	if c.Scope != "" {
		s += " (" + c.Scope + ")"
	}
	return s
}

// plan arms one crash: the first time an instance reaches point for event
// (and scope, for effect points), it ends.
type plan struct {
	Point Point
	Event string
	Scope string // "" matches any scope
	fired bool
}

// msgState is one broker message the kit published in this rule.
type msgState struct {
	brokerID string
	event    co.Event
	attempts int
	acked    bool
}

// harness is one rule's world: a fresh topic on the target's broker, fresh
// sinks and a fresh store file, workers in one consumer group, and the
// history of everything that happened.
type harness struct {
	ctx    context.Context
	cancel context.CancelFunc
	t      Target
	tm     Timing
	rule   string
	ev     *verdict.Evidence
	rec    *history.Recorder

	broker    mq.Broker
	topic     string
	group     string
	clock     *sinks.Scaled
	index     *sinks.MemIndex
	notifier  *sinks.MemNotifier
	storePath string
	dir       string

	mu       sync.Mutex
	msgs     map[string]*msgState
	order    []string
	plans    []*plan
	loseAck  map[string]int // event id -> acks still to lose
	gates    map[string]*gate
	crashes  int
	panics   []string
	errs     []string
	blocked  []string
	lostAcks int

	instances atomic.Int32
	inflight  atomic.Int32
	wg        sync.WaitGroup
	workers   []*worker
}

func nonce() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newHarness builds the world for rule and starts n workers; everything is
// released by a DeferCleanup.
func newHarness(ctx context.Context, t Target, rule string, ev *verdict.Evidence, workers int) *harness {
	tm := t.Timing.withDefaults()
	b, err := t.Broker(ctx)
	if err != nil {
		spec.Unknown("the broker could not be opened: %v", err)
	}
	hctx, cancel := context.WithCancel(context.Background())
	clock := sinks.NewScaled(tm.Scale)
	h := &harness{
		ctx: hctx, cancel: cancel, t: t, tm: tm, rule: rule, ev: ev, rec: history.New(),
		broker: b, topic: "co-" + strings.ReplaceAll(strings.ToLower(rule), ".", "-") + "-" + nonce(), group: "consumer",
		clock: clock, index: sinks.NewIndex(clock), notifier: sinks.NewNotifier(clock, tm.NotifyLatency),
		dir: ginkgo.GinkgoT().TempDir(), msgs: map[string]*msgState{}, loseAck: map[string]int{}, gates: map[string]*gate{},
	}
	h.storePath = filepath.Join(h.dir, "consumer-store.db")
	ginkgo.DeferCleanup(h.close)
	if err := b.CreateTopic(ctx, h.topic, mq.TopicConfig{Retention: mq.Limits}); err != nil {
		spec.Unknown("creating topic %s: %v", h.topic, err)
	}
	ev.Figure("clock scale", fmt.Sprintf("x%.0f (a seed minute is %s real)", tm.Scale, h.clock.Real(time.Minute)), "")
	ev.Figure("broker ack wait", fmt.Sprintf("%s seed = %s real", tm.AckWait, h.clock.Real(tm.AckWait)), "")
	for i := 1; i <= workers; i++ {
		w := &worker{h: h, name: fmt.Sprintf("W%d", i)}
		h.workers = append(h.workers, w)
		h.wg.Add(1)
		go w.run()
	}
	return h
}

func (h *harness) close() {
	h.cancel()
	h.wg.Wait()
	h.ev.Figure("crashes injected", h.crashes, "")
	h.ev.Figure("consumer instances started", int(h.instances.Load()), "")
	h.ev.Figure("broker messages published", len(h.order), "")
	if h.lostAcks > 0 {
		h.ev.Figure("acks lost by the kit", h.lostAcks, "")
	}
	h.ev.Record(h.rec.Ops())
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = h.broker.DeleteTopic(cctx, h.topic)
	_ = h.broker.Close()
}

// arm adds crash plans.
func (h *harness) arm(ps ...plan) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range ps {
		p := ps[i]
		h.plans = append(h.plans, &p)
		h.rec.Note("kit", "arm crash", p.Event, string(p.Point)+" "+p.Scope)
	}
}

// fired reports how many plans for event fired.
func (h *harness) fired(event string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, p := range h.plans {
		if p.Event == event && p.fired {
			n++
		}
	}
	return n
}

// shouldCrash consumes the first matching unfired plan.
func (h *harness) shouldCrash(pt Point, event, scope string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.plans {
		if !p.fired && p.Point == pt && p.Event == event && (p.Scope == "" || p.Scope == scope) {
			p.fired = true
			h.crashes++
			return true
		}
	}
	return false
}

// loseAcks makes the kit swallow the next n acks of event: the consumer is
// told the ack went through, the broker never sees it (seed 002, 三: the ack
// request itself can be lost), so the broker redelivers after its ack wait.
func (h *harness) loseAcks(event string, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.loseAck[event] += n
}

func (h *harness) takeLostAck(event string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.loseAck[event] > 0 {
		h.loseAck[event]--
		h.lostAcks++
		return true
	}
	return false
}

// publish sends e under brokerID and tracks it until it is acked.
func (h *harness) publish(e co.Event, brokerID string) {
	h.mu.Lock()
	if _, dup := h.msgs[brokerID]; !dup {
		h.msgs[brokerID] = &msgState{brokerID: brokerID, event: e}
		h.order = append(h.order, brokerID)
	}
	h.mu.Unlock()
	op := h.rec.Invoke("kit", "publish", brokerID)
	ack, err := h.broker.Publish(h.ctx, h.topic, co.Message(e, brokerID))
	if err != nil {
		op.Info(err.Error())
		spec.Unknown("publishing %s failed: %v", brokerID, err)
	}
	if ack.Duplicate {
		op.OK("dropped by the broker as a duplicate")
		h.mu.Lock()
		h.msgs[brokerID].acked = true // nothing will be delivered for it
		h.mu.Unlock()
		return
	}
	op.OK("at " + ack.Position)
}

// track registers a message that something other than h.publish put on the
// topic (an outbox relay), so settle waits for it.
func (h *harness) track(brokerID string, e co.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.msgs[brokerID]; !ok {
		h.msgs[brokerID] = &msgState{brokerID: brokerID, event: e}
		h.order = append(h.order, brokerID)
	}
}

func (h *harness) delivered(brokerID string) (co.Event, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st, ok := h.msgs[brokerID]
	if !ok {
		return co.Event{}, false
	}
	st.attempts++
	return st.event, true
}

func (h *harness) attempts(brokerID string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st, ok := h.msgs[brokerID]; ok {
		return st.attempts
	}
	return 0
}

func (h *harness) markAcked(brokerID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st, ok := h.msgs[brokerID]; ok {
		st.acked = true
	}
}

// pending lists the messages not yet acked.
func (h *harness) pending() []*msgState {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*msgState
	for _, id := range h.order {
		if st := h.msgs[id]; !st.acked {
			c := *st
			out = append(out, &c)
		}
	}
	return out
}

// settle waits until every published message is acked and no Handle is
// running. If that does not happen within Timing.Settle, the rule ends: a
// consumer that blocked is unknown (the deadline is the evidence), one that
// panicked or returned errors fails with the panic or error.
func (h *harness) settle() {
	deadline := time.Now().Add(h.tm.Settle)
	for {
		if len(h.pending()) == 0 && h.inflight.Load() == 0 {
			return
		}
		if time.Now().After(deadline) || h.ctx.Err() != nil {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	var waiting []string
	for _, st := range h.pending() {
		waiting = append(waiting, fmt.Sprintf("%s (%d deliveries)", st.brokerID, st.attempts))
	}
	h.mu.Lock()
	blocked, panics, errs := append([]string(nil), h.blocked...), append([]string(nil), h.panics...), append([]string(nil), h.errs...)
	h.mu.Unlock()
	h.ev.Figure("unsettled messages", len(waiting), "")
	h.ev.Notef("not acked after %s: %s", h.tm.Settle, strings.Join(waiting, ", "))
	h.ev.Record(h.rec.Ops())
	switch {
	case len(blocked) > 0:
		h.ev.Notef("deadline: %s", blocked[0])
		spec.Unknown("the consumer blocked: %s; %d message(s) never acked", blocked[0], len(waiting))
	case len(panics) > 0:
		h.ev.Notef("panic: %s", panics[0])
		ginkgo.Fail(fmt.Sprintf("the consumer panicked on a delivery (%d panics, instance lost each time): %s", len(panics), firstLine(panics[0])))
	case len(errs) > 0:
		ginkgo.Fail(fmt.Sprintf("the consumer returned an error for %d deliveries and never acked %s: %s", len(errs), strings.Join(waiting, ", "), errs[len(errs)-1]))
	case len(waiting) == 0:
		spec.Unknown("a Handle call was still running after %s", h.tm.Settle)
	default:
		ginkgo.Fail(fmt.Sprintf("the consumer never acked %s within %s", strings.Join(waiting, ", "), h.tm.Settle))
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// gate holds the first n deliveries of one event until all n arrived (or a
// bound passed), then releases them together: two workers handling the same
// event at the same moment (CO-1.5).
type gate struct {
	n       int
	arrived int
	open    chan struct{}
	raced   bool
}

func (h *harness) addGate(event string, n int) *gate {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := &gate{n: n, open: make(chan struct{})}
	h.gates[event] = g
	return g
}

func (h *harness) waitGate(event string) {
	h.mu.Lock()
	g, ok := h.gates[event]
	if !ok || g.arrived >= g.n {
		h.mu.Unlock()
		return
	}
	g.arrived++
	if g.arrived == g.n {
		g.raced = true
		close(g.open)
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	select {
	case <-g.open:
	case <-time.After(time.Second):
		// The other copy did not come: release alone, the trial does not count as raced.
		h.mu.Lock()
		if g.arrived < g.n {
			g.arrived = g.n
			close(g.open)
		}
		h.mu.Unlock()
	case <-h.ctx.Done():
	}
}

// worker is one member of the consumer group. It runs one instance at a
// time and starts a new one, on the same store file and a new broker
// connection, whenever its instance is lost.
type worker struct {
	h    *harness
	name string
}

type instance struct {
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
	for h.ctx.Err() == nil {
		if inst == nil {
			var err error
			inst, err = h.startInstance(w.name)
			if err != nil {
				h.rec.Note(w.name, "start", "", "failed: "+err.Error())
				h.mu.Lock()
				h.errs = append(h.errs, "starting an instance: "+err.Error())
				h.mu.Unlock()
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
			if !w.deliver(inst, d) {
				h.kill(inst)
				inst = nil
				break
			}
		}
	}
	if inst != nil {
		h.kill(inst)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

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
	inst = &instance{name: name, mc: mc, store: store}
	env := co.Env{Worker: name, Index: &kitIndex{h, inst}, Notifier: &kitNotifier{h, inst}, Store: &kitStore{inst}, Clock: h.clock}
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

type outcome struct {
	err   error
	crash *crash
	panic string
}

// deliver hands one delivery to the instance in a goroutine of its own and
// returns false when the instance is lost (crash, panic, blocked).
func (w *worker) deliver(inst *instance, d mq.Delivery) bool {
	h := w.h
	m := d.Message()
	e, known := h.delivered(m.ID)
	if !known {
		// Not published by this rule: a stray; keep it away from the consumer.
		_ = d.Term(h.ctx)
		return true
	}
	h.rec.Note(inst.name, "deliver", m.ID, fmt.Sprintf("attempt %d", d.Attempt()))
	h.waitGate(e.EventID)
	kd := &kitDelivery{h: h, inst: inst, d: d, e: e, brokerID: m.ID}
	h.inflight.Add(1)
	var left sync.Once
	leave := func() { left.Do(func() { h.inflight.Add(-1) }) }
	done := make(chan outcome, 1)
	hctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	go func() {
		var o outcome
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
		o.err = inst.c.Handle(hctx, kd)
	}()
	timer := time.NewTimer(h.tm.HandleDeadline)
	defer timer.Stop()
	var o outcome
	select {
	case o = <-done:
	case <-timer.C:
		msg := fmt.Sprintf("Handle(%s) by %s did not return within %s", m.ID, inst.name, h.tm.HandleDeadline)
		h.rec.Note(inst.name, "blocked", m.ID, msg)
		h.mu.Lock()
		h.blocked = append(h.blocked, msg)
		h.mu.Unlock()
		leave() // the goroutine is abandoned; the dead instance can no longer touch a sink
		return false
	case <-h.ctx.Done():
		return false
	}
	switch {
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
		h.mu.Lock()
		h.errs = append(h.errs, fmt.Sprintf("Handle(%s): %v", m.ID, o.err))
		h.mu.Unlock()
		if !kd.settled.Load() {
			_ = d.Nak(h.ctx, h.clock.Real(h.tm.NakDelay))
		}
	}
	return true
}

// point is every kit wrapper's first and last step: a call by an ended
// instance ends again; an armed plan ends the instance here.
func (inst *instance) point(h *harness, pt Point, event, scope string) {
	if inst.dead.Load() {
		panic(crash{Stale: true})
	}
	if pt != "" && h.shouldCrash(pt, event, scope) {
		inst.dead.Store(true)
		h.rec.Note(inst.name, "crash", event, string(pt)+" "+scope)
		panic(crash{Point: pt, Event: event, Scope: scope})
	}
}

type kitDelivery struct {
	h        *harness
	inst     *instance
	d        mq.Delivery
	e        co.Event
	brokerID string
	settled  atomic.Bool
}

func (k *kitDelivery) Event() co.Event { return k.e }
func (k *kitDelivery) Attempt() int    { return k.d.Attempt() }

func (k *kitDelivery) Ack(ctx context.Context) error {
	k.inst.point(k.h, BeforeAck, k.e.EventID, "")
	k.settled.Store(true)
	if k.h.takeLostAck(k.e.EventID) {
		k.h.rec.Note(k.inst.name, "ack", k.brokerID, "lost by the kit: the broker never sees it")
	} else {
		op := k.h.rec.Invoke(k.inst.name, "ack", k.brokerID)
		if err := k.d.Ack(ctx); err != nil {
			op.Info(err.Error())
			k.inst.point(k.h, "", "", "")
			return err
		}
		op.OK("confirmed")
		k.h.markAcked(k.brokerID)
	}
	k.inst.point(k.h, AfterAck, k.e.EventID, "")
	return nil
}

func (k *kitDelivery) Nak(ctx context.Context, delay time.Duration) error {
	k.inst.point(k.h, "", "", "")
	k.settled.Store(true)
	k.h.rec.Note(k.inst.name, "nak", k.brokerID, "delay "+delay.String()+" (seed time)")
	return k.d.Nak(ctx, k.h.clock.Real(delay))
}

type kitIndex struct {
	h    *harness
	inst *instance
}

func (x *kitIndex) write(ctx context.Context, action string, doc co.Doc, f func() (bool, error)) (bool, error) {
	ev := co.EventID(doc.ID, doc.Version)
	x.inst.point(x.h, BeforeEffect, ev, co.ScopeIndex)
	op := x.h.rec.Invoke(x.inst.name, action, ev)
	applied, err := f()
	switch {
	case err != nil:
		op.Info(err.Error())
	case applied:
		op.OK("written")
	default:
		op.OK("not applied")
	}
	x.inst.point(x.h, AfterEffect, ev, co.ScopeIndex)
	return applied, err
}

func (x *kitIndex) Put(ctx context.Context, doc co.Doc) error {
	_, err := x.write(ctx, "index put", doc, func() (bool, error) { return true, x.h.index.Put(ctx, doc) })
	return err
}

func (x *kitIndex) Upsert(ctx context.Context, doc co.Doc) (bool, error) {
	return x.write(ctx, "index upsert", doc, func() (bool, error) { return x.h.index.Upsert(ctx, doc) })
}

func (x *kitIndex) Get(ctx context.Context, id string) (co.Doc, bool, error) {
	x.inst.point(x.h, "", "", "")
	return x.h.index.Get(ctx, id)
}

type kitNotifier struct {
	h    *harness
	inst *instance
}

func (n *kitNotifier) Send(ctx context.Context, msg co.Notification) error {
	ev := co.EventID(msg.MessageID, msg.Version)
	n.inst.point(n.h, BeforeEffect, ev, co.ScopeNotify)
	op := n.h.rec.Invoke(n.inst.name, "notify", ev)
	err := n.h.notifier.Send(ctx, msg)
	if err != nil {
		op.Info(err.Error())
	} else {
		op.OK("sent")
	}
	n.inst.point(n.h, AfterEffect, ev, co.ScopeNotify)
	return err
}

func (n *kitNotifier) Sent(ctx context.Context, messageID string, version int) (int, error) {
	n.inst.point(n.h, "", "", "")
	return n.h.notifier.Sent(ctx, messageID, version)
}

// kitStore passes through to the instance's own handle; an ended instance
// can no longer write.
type kitStore struct{ inst *instance }

func (s *kitStore) check() {
	if s.inst.dead.Load() {
		panic(crash{Stale: true})
	}
}

func (s *kitStore) Get(ctx context.Context, key string) (co.Record, bool, error) {
	s.check()
	return s.inst.store.Get(ctx, key)
}

func (s *kitStore) Insert(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	s.check()
	return s.inst.store.Insert(ctx, key, value, ttl)
}

func (s *kitStore) Put(ctx context.Context, key, value string, ttl time.Duration) error {
	s.check()
	return s.inst.store.Put(ctx, key, value, ttl)
}

func (s *kitStore) CompareAndSwap(ctx context.Context, key, old, value string, ttl time.Duration) (bool, error) {
	s.check()
	return s.inst.store.CompareAndSwap(ctx, key, old, value, ttl)
}

func (s *kitStore) Delete(ctx context.Context, key string) error {
	s.check()
	return s.inst.store.Delete(ctx, key)
}

// opsAbout returns the timeline ops whose value names message m: the
// smallest history that shows what happened to it.
func opsAbout(ops []history.Op, m string) []history.Op {
	var out []history.Op
	needle := ":" + m + ":"
	for _, o := range ops {
		if strings.Contains(o.Value, needle) || strings.Contains(o.Result, needle) {
			out = append(out, o)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
