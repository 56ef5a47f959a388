package consumer

import (
	"fmt"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/httpsinks"
)

// The svcHarness side of the world interface: the same steps, crash plans,
// failures and model as the in-process harness, observed from outside.

func (h *svcHarness) event(base string, version int) co.Event {
	return co.NewEvent(base+"@"+h.tag, version)
}

func (h *svcHarness) suffix() string { return "@" + h.tag }

// play publishes one step, waits until the broker has it acked, and feeds
// the model.
func (h *svcHarness) play(s step) {
	if (s.kind == stepTwin || s.kind == stepPair) && h.s.Workers < 2 && (h.r.ID == "CO-1.5" || h.r.ID == "CO-1.7") {
		h.r.NotApplicable("the service runs as one replica (Service.Workers = 1): no two replicas can hold one event at once")
	}
	if s.crash != nil {
		h.arm(*s.crash)
	}
	if s.loseAck {
		h.mu.Lock()
		h.loseAck[s.event.EventID]++
		h.mu.Unlock()
	}
	switch s.kind {
	case stepNew:
		h.publish(s.event, s.event.EventID)
	case stepReplay:
		h.replays++
		h.publish(s.event, fmt.Sprintf("%s#replay-%d", s.event.EventID, h.replays))
	case stepTwin:
		h.addGate(2, s.event.EventID)
		h.publish(s.event, s.event.EventID+"#a")
		h.publish(s.event, s.event.EventID+"#b")
	case stepPair:
		h.addGate(2, s.event.EventID, s.older.EventID)
		h.publish(s.event, s.event.EventID)
		h.publish(s.older, s.older.EventID)
		if s.dup {
			h.publish(s.event, s.event.EventID+"#dup")
			h.publish(s.older, s.older.EventID+"#dup")
		}
	}
	if h.r.ID == "CO-5.1" && h.rnd.Float64() < pRandomKill {
		h.randomKill(s.event.EventID)
	}
	h.settle()
	h.expectNoTerm()
	if s.kind == stepPair {
		h.model.apply(s.older)
	}
	h.model.apply(s.event)
	h.disarm()
}

func (h *svcHarness) publish(e co.Event, brokerID string) {
	h.mu.Lock()
	if _, ok := h.msgs[brokerID]; !ok {
		h.msgs[brokerID] = &msgState{brokerID: brokerID, event: e}
		h.order = append(h.order, brokerID)
	}
	h.mu.Unlock()
	op := h.rec.Invoke("kit", "publish", brokerID)
	// The delivery may reach the proxy before Publish returns: the wire
	// hook waits on pubMu to learn the sequence.
	m, err := h.s.Envelope.Message(e, brokerID)
	if err != nil {
		op.Info(err.Error())
		h.r.Unknown("the kit cannot shape %s in the service's envelope: %v", brokerID, err)
	}
	h.pubMu.Lock()
	seq, dup, err := h.ch.Publish(h.ctx, m)
	if err == nil && !dup {
		h.mu.Lock()
		h.bySeq[seq] = brokerID
		h.mu.Unlock()
	}
	h.pubMu.Unlock()
	if err != nil {
		op.Info(err.Error())
		h.r.Unknown("publishing %s failed: %v", brokerID, err)
	}
	if dup {
		op.OK("dropped by the broker as a duplicate")
		h.markAcked(brokerID)
		return
	}
	op.OK(fmt.Sprintf("at stream sequence %d", seq))
}

// expectNoTerm fails the rule when the service terminated an event: every
// event the kit publishes is well formed in the service's envelope, and a
// terminated one is never redelivered, so it is lost (a service that cannot
// find its fields, such as one reading another envelope, rejects them all).
func (h *svcHarness) expectNoTerm() {
	h.mu.Lock()
	terms := append([]string(nil), h.terms...)
	h.mu.Unlock()
	h.r.Expect(terms).To(gomega.BeEmpty(), "the service terminated (+TERM) %d of the kit's events, which the broker never redelivers, so they are lost: %s; they were in the envelope %s (the service's output is in the evidence)",
		len(terms), strings.Join(terms, ", "), h.s.Envelope)
}

func (h *svcHarness) markAcked(brokerID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st, ok := h.msgs[brokerID]; ok {
		st.acked = true
	}
}

func (h *svcHarness) pending() []msgState {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []msgState
	for _, id := range h.order {
		if st := h.msgs[id]; !st.acked {
			out = append(out, *st)
		}
	}
	return out
}

func (h *svcHarness) attempts(brokerID string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st, ok := h.msgs[brokerID]; ok {
		return st.attempts
	}
	return 0
}

// settled: the kit saw an ack of every message forwarded, and the broker
// reads back nothing outstanding.
func (h *svcHarness) settled() bool {
	if len(h.pending()) > 0 {
		return false
	}
	n, err := h.ch.Outstanding(h.ctx)
	return err == nil && n == 0
}

// settle waits until the step is settled; if it does not within
// Service.Settle, the rule ends: unknown for the kit's own failures or the
// deadline, fail for a service that exited or never acked.
func (h *svcHarness) settle() {
	if attentive(h.ctx, h.s.Settle, 10*time.Millisecond, h.settled) {
		return
	}
	var waiting []string
	for _, st := range h.pending() {
		waiting = append(waiting, fmt.Sprintf("%s (%d deliveries)", st.brokerID, st.attempts))
	}
	h.mu.Lock()
	setup, errs := append([]string(nil), h.setupErrs...), append([]string(nil), h.errs...)
	h.mu.Unlock()
	h.ev.Figure("unsettled messages", len(waiting), "")
	h.ev.Notef("not acked after %s: %s", h.s.Settle, strings.Join(waiting, ", "))
	if len(setup) > 0 {
		h.r.Unknown("the kit could not keep the service running: %s", setup[0])
	}
	if h.r.Context().Err() != nil {
		h.r.Unknown("the rule's deadline came while %s waited to be acked", strings.Join(waiting, ", "))
	}
	if len(errs) > 0 {
		h.r.Expect(errs).To(gomega.BeEmpty(), "the service exited by itself %d times and never acked %s: %s",
			len(errs), strings.Join(waiting, ", "), firstLine(errs[0]))
	}
	if len(waiting) == 0 {
		n, err := h.ch.Outstanding(h.ctx)
		if err != nil {
			h.r.Unknown("reading the consumer back from the broker: %v", err)
		}
		h.r.Expect(n).To(gomega.BeZero(), "the broker still holds %d unacked messages after %s", n, h.s.Settle)
	}
	h.r.Expect(waiting).To(gomega.BeEmpty(), "the service never acked %s within %s", strings.Join(waiting, ", "), h.s.Settle)
}

func (h *svcHarness) diff() []difference {
	return h.model.diff(h.sinks.Effects(), h.sinks.Docs())
}

// expectModel judges the sinks against the model. A black box has no
// Reconcile the kit could call: a service that restores effects lost to an
// ack-first crash must do so by itself before it acks anything new.
func (h *svcHarness) expectModel(why string) {
	diffs := h.diff()
	var w, n int
	for _, e := range h.sinks.Effects() {
		if e.Scope == co.ScopeIndex {
			w++
		} else {
			n++
		}
	}
	h.ev.Figure("index writes observed", w, "over HTTP")
	h.ev.Figure("notifications observed", n, "over HTTP")
	if len(diffs) == 0 {
		return
	}
	lines := make([]string, len(diffs))
	for i, d := range diffs {
		lines[i] = d.String()
		h.ev.Notef("differs from the model: %s", d)
	}
	h.ev.Smallest(opsAbout(h.rec.Ops(), diffs[0].MessageID))
	more := ""
	if len(diffs) > 1 {
		more = fmt.Sprintf(" (and %d more differences)", len(diffs)-1)
	}
	h.r.Expect(lines).To(gomega.BeEmpty(), "%s: %s%s", why, lines[0], more)
}

func (h *svcHarness) arm(ps ...plan) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range ps {
		h.plans = append(h.plans, &p)
		h.rec.Note("kit", "arm crash", p.event, p.String())
	}
}

func (h *svcHarness) fired(event string) int {
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

func (h *svcHarness) shouldCrash(pt point, event, scope string, n int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.plans {
		if !p.fired && p.point == pt && p.event == event && (p.scope == "" || p.scope == scope) && p.n == n {
			p.fired = true
			return true
		}
	}
	return false
}

func (h *svcHarness) disarm() {
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

func (h *svcHarness) injectFault(f fault) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.faults = append(h.faults, &f)
	h.rec.Note("kit", "arm failure", f.event, string(f.kind)+" "+f.scope)
}

func (h *svcHarness) takeFault(event, scope string) (faultKind, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range h.faults {
		if !f.fired && f.event == event && f.scope == scope {
			f.fired = true
			h.faultsFired++
			return f.kind, true
		}
	}
	return "", false
}

func (h *svcHarness) faultCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.faultsFired
}

func (h *svcHarness) expectAckedOnlyAfterEffects() {
	h.mu.Lock()
	acked := append([]string(nil), h.ackedFailed...)
	h.mu.Unlock()
	h.r.Expect(acked).To(gomega.BeEmpty(), "a delivery whose effect failed was acked: %s", strings.Join(acked, "; "))
}

func (h *svcHarness) firstDelivery(kd *svcDelivery) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.first[kd.e.EventID]; !ok {
		h.first[kd.e.EventID] = kd
	}
}

func (h *svcHarness) trace(event string) []string {
	h.mu.Lock()
	kd := h.first[event]
	h.mu.Unlock()
	if kd == nil {
		return nil
	}
	return kd.trace()
}

func (h *svcHarness) addGate(n int, events ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := &gate{n: n, open: make(chan struct{})}
	for _, e := range events {
		h.gates[e] = g
	}
}

func (h *svcHarness) raced(event string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	g, ok := h.gates[event]
	return ok && g.raced
}

// waitGate holds a delivery in the proxy until the gate's other delivery
// reached a replica too (or a second passed): two replicas holding one
// event, or two versions, at the same moment.
func (h *svcHarness) waitGate(event string) {
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
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-g.open:
	case <-t.C:
		h.mu.Lock()
		if g.arrived < g.n {
			g.arrived = g.n
			close(g.open)
		}
		h.mu.Unlock()
	case <-h.ctx.Done():
	}
}

// sinkLabel names a sink call as the in-process trace does.
func sinkLabel(kind string) string {
	switch kind {
	case httpsinks.KindIndexPut:
		return "index put"
	case httpsinks.KindIndexPutV:
		return "index upsert"
	case httpsinks.KindIndexGet:
		return "index get"
	case httpsinks.KindNotifyRead:
		return "notify sent?"
	}
	return "notify"
}

// sinkHook is where a sink call can kill the replica that made it, or fail.
func (h *svcHarness) sinkHook(c httpsinks.Call, st httpsinks.Stage) httpsinks.Action {
	w := h.worker(c.Client)
	if w == nil {
		return httpsinks.Proceed
	}
	kd := w.current()
	event := ""
	switch {
	case c.MessageID != "" && c.Version > 0:
		event = co.EventID(c.MessageID, c.Version)
	case kd != nil && kd.e.MessageID == c.MessageID:
		event = kd.e.EventID // a read names only the document
	}
	label, scope := sinkLabel(c.Kind), c.Scope()
	ours := kd != nil && kd.e.EventID == event
	if st == httpsinks.BeforeApply {
		n := 0
		if kd != nil {
			n = kd.count(label)
			h.mu.Lock()
			h.callN(c.Seq, n)
			h.mu.Unlock()
			if h.shouldCrash(beforeCall, kd.e.EventID, "", n) {
				h.crash(w, fmt.Sprintf("crash before call %d (%s) arrived at the sink", n, label), kd.e.EventID)
				return httpsinks.DropAnswer
			}
		}
		if c.Effect() && h.shouldCrash(beforeEffect, event, scope, 0) {
			h.crash(w, "crash when the "+scope+" call arrived, before it was applied", event)
			return httpsinks.DropAnswer
		}
		op := h.rec.Invoke(w.actor(), label, event)
		var fk faultKind
		failing := false
		if c.Effect() {
			fk, failing = h.takeFault(event, scope)
		}
		if ours {
			if failing {
				kd.doubt.failed(scope)
			} else {
				kd.doubt.resolved(scope)
			}
		}
		h.mu.Lock()
		h.callOps[c.Seq] = op
		if failing && fk == faultTimeout {
			h.loseAnswer[c.Seq] = true
		}
		h.mu.Unlock()
		if failing && fk == faultError {
			op.Info("failed by the kit: 503, not applied")
			return httpsinks.FailCall
		}
		return httpsinks.Proceed
	}
	h.mu.Lock()
	op, hasOp := h.callOps[c.Seq]
	lose := h.loseAnswer[c.Seq]
	n := h.callNs[c.Seq]
	h.mu.Unlock()
	if hasOp {
		if lose {
			op.Info(c.Outcome + "; the kit lost the answer")
		} else {
			op.OK(c.Outcome)
		}
	}
	if lose {
		h.rec.Note("kit", "lose answer", event, "the "+scope+" call took effect; the connection closes without an answer")
		return httpsinks.DropAnswer
	}
	if kd != nil && n > 0 && h.shouldCrash(afterCall, kd.e.EventID, "", n) {
		h.crash(w, fmt.Sprintf("crash after call %d (%s) was applied, before its answer", n, label), kd.e.EventID)
		return httpsinks.DropAnswer
	}
	if c.Effect() && h.shouldCrash(afterEffect, event, scope, 0) {
		h.crash(w, "crash after the "+scope+" call was applied, before its answer", event)
		return httpsinks.DropAnswer
	}
	return httpsinks.Proceed
}

// callN remembers the number of sink call seq in its delivery; h.mu held.
func (h *svcHarness) callN(seq, n int) {
	if h.callNs == nil {
		h.callNs = map[int]int{}
	}
	h.callNs[seq] = n
}

// wireHook is where the broker traffic of a replica is seen: its pulls
// (readiness), its deliveries (counted, gated), its acks (lost, or crashed
// around).
func (h *svcHarness) wireHook(ev WireEvent, st WireStage) bool {
	w := h.worker(ev.Worker)
	if w == nil {
		return true
	}
	switch ev.Kind {
	case WirePull:
		if st == AfterForward {
			run := w.p.Run()
			w.mu.Lock()
			w.pulled = run
			w.mu.Unlock()
		}
		return true
	case WireDeliver:
		if st == AfterForward {
			return true
		}
		brokerID, e, n := h.delivered(ev.Seq)
		if brokerID == "" {
			h.rec.Note(w.actor(), "deliver", fmt.Sprint(ev.Seq), "a message this rule did not publish")
			return true
		}
		kd := &svcDelivery{w: w, brokerID: brokerID, e: e, seq: ev.Seq, attempt: n, run: w.p.Run()}
		w.mu.Lock()
		w.cur = kd
		w.mu.Unlock()
		h.firstDelivery(kd)
		h.rec.Note(w.actor(), "deliver", brokerID, fmt.Sprintf("attempt %d (the broker's delivery count %d)", n, ev.Delivered))
		h.waitGate(e.EventID)
		return true
	}
	kd := w.current()
	if kd == nil || kd.seq != ev.Seq {
		if st == BeforeForward {
			h.rec.Note(w.actor(), ev.Kind, fmt.Sprint(ev.Seq), "of a delivery the replica did not get last")
		}
		if ev.Kind == WireAck && st == AfterForward {
			h.markSeqAcked(ev.Seq)
		}
		return true
	}
	e := kd.e.EventID
	if ev.Kind != WireAck {
		if st == BeforeForward {
			kd.count(ev.Kind)
		} else {
			h.rec.Note(w.actor(), ev.Kind, kd.brokerID, "forwarded to the broker")
			if ev.Kind == WireTerm {
				h.markAcked(kd.brokerID) // never redelivered: settled
				h.mu.Lock()
				h.terms = append(h.terms, fmt.Sprintf("%s by %s (delivery %d)", kd.brokerID, w.actor(), kd.attempt))
				h.mu.Unlock()
			}
		}
		return true
	}
	if st == BeforeForward {
		n := kd.count("ack")
		kd.mu.Lock()
		kd.ackN = n
		kd.mu.Unlock()
		if h.shouldCrash(beforeCall, e, "", n) {
			h.crash(w, fmt.Sprintf("crash before call %d (ack) reached the broker", n), e)
			return false
		}
		if h.shouldCrash(beforeAck, e, "", 0) {
			h.crash(w, "crash when its ack reached the proxy, before the broker saw it", e)
			return false
		}
		if left := kd.doubt.left(); len(left) > 0 {
			msg := fmt.Sprintf("%s acked %s after its %s call failed, without calling it again", w.actor(), kd.brokerID, strings.Join(left, ", "))
			h.rec.Note(w.actor(), "ack after failure", kd.brokerID, msg)
			h.mu.Lock()
			h.ackedFailed = append(h.ackedFailed, msg)
			h.mu.Unlock()
		}
		h.mu.Lock()
		lost := h.loseAck[e] > 0
		if lost {
			h.loseAck[e]--
			h.lostAcks++
		}
		h.mu.Unlock()
		if lost {
			h.rec.Note(w.actor(), "ack", kd.brokerID, "lost by the kit: dropped in the proxy, the broker never sees it")
			return false
		}
		op := h.rec.Invoke(w.actor(), "ack", kd.brokerID)
		kd.mu.Lock()
		kd.ackOp = &op
		kd.mu.Unlock()
		return true
	}
	kd.mu.Lock()
	op, n := kd.ackOp, kd.ackN
	kd.mu.Unlock()
	if op != nil {
		op.OK("forwarded to the broker")
	}
	switch {
	case h.shouldCrash(afterCall, e, "", n):
		h.crash(w, fmt.Sprintf("crash after call %d (ack) was forwarded to the broker", n), e)
	case h.shouldCrash(afterAck, e, "", 0):
		h.crash(w, "crash right after its ack was forwarded to the broker", e)
	}
	h.markAcked(kd.brokerID)
	return true
}

// delivered counts one delivery of the message at seq; "" for a sequence
// this rule did not publish.
func (h *svcHarness) delivered(seq uint64) (string, co.Event, int) {
	h.pubMu.RLock()
	defer h.pubMu.RUnlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	id, ok := h.bySeq[seq]
	if !ok {
		return "", co.Event{}, 0
	}
	st := h.msgs[id]
	st.attempts++
	return id, st.event, st.attempts
}

func (h *svcHarness) markSeqAcked(seq uint64) {
	h.mu.Lock()
	id := h.bySeq[seq]
	h.mu.Unlock()
	if id != "" {
		h.markAcked(id)
	}
}

// pRandomKill is the chance that a CO-5.1 step also kills a random replica
// at a random moment (0 to 40 ms after its publish), wherever it is: inside
// its own transaction, between two calls, idle.
const pRandomKill = 0.05

// randomKill kills a random replica after a random delay, in the
// background; the step's settle waits for whatever it interrupted.
func (h *svcHarness) randomKill(event string) {
	w := h.workers[h.rnd.IntN(len(h.workers))]
	delay := time.Duration(h.rnd.IntN(40)) * time.Millisecond
	h.mu.Lock()
	h.randomKills++
	h.mu.Unlock()
	h.bg.Add(1)
	go func() {
		defer h.bg.Done()
		sleep(h.ctx, delay)
		if h.ctx.Err() == nil {
			h.crash(w, fmt.Sprintf("a random moment, %s after the publish", delay), event)
		}
	}()
}
