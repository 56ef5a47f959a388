package consumer

import (
	"fmt"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/coservice"
	"github.com/onceproof/tck/internal/httpsinks"
)

// The black box's crash points: where a sink call or a frame of a
// replica's broker traffic can kill the replica, fail, or be lost.

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
func (h *blackbox) sinkHook(c httpsinks.Call, st httpsinks.Stage) httpsinks.Action {
	w := h.replicaNamed(c.Client)
	if w == nil {
		return httpsinks.Proceed
	}
	h.sawCall()
	kd := w.current()
	event, delivery := "", ""
	switch {
	case c.MessageID != "" && c.Version > 0:
		event = co.EventID(c.MessageID, c.Version)
	case kd != nil && kd.e.MessageID == c.MessageID:
		event = kd.e.EventID // a read names only the document
	}
	if kd != nil {
		delivery = kd.e.EventID
	}
	label, scope := sinkLabel(c.Kind), c.Scope()
	pt := point("")
	if st == httpsinks.BeforeApply {
		n := 0
		if kd != nil {
			n = kd.count(label)
			h.mu.Lock()
			h.callNs[c.Seq] = n
			h.mu.Unlock()
		}
		if c.Effect() {
			pt = beforeEffect
		}
		if why, about := h.tripAround(true, delivery, n, label, pt, event, scope); why != "" {
			h.crash(w, why+": the call arrived at the sink, not applied", about)
			return httpsinks.DropAnswer
		}
		return h.applying(w, kd, c, label, event, scope)
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
	if c.Effect() {
		pt = afterEffect
		h.sawEffect(event)
	}
	if why, about := h.tripAround(false, delivery, n, label, pt, event, scope); why != "" {
		h.crash(w, why+": the call applied, before its answer", about)
		return httpsinks.DropAnswer
	}
	return httpsinks.Proceed
}

// applying records a sink call about to be applied and fails it, or
// arranges to lose its answer, where a fault is armed.
func (h *blackbox) applying(w *replica, kd *svcDelivery, c httpsinks.Call, label, event, scope string) httpsinks.Action {
	op := h.rec.Invoke(w.actor(), label, event)
	var fk faultKind
	failing := false
	if c.Effect() {
		fk, failing = h.takeFault(event, scope)
	}
	if kd != nil && kd.e.EventID == event {
		kd.effect(scope, failing)
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

// wireHook is where the broker traffic of a replica is seen: its pulls
// (readiness), its deliveries (counted, gated), its acks (lost, or crashed
// around).
func (h *blackbox) wireHook(ev coservice.Event, st coservice.Stage) bool {
	w := h.replicaNamed(ev.Worker)
	if w == nil {
		return true
	}
	if ev.Kind != coservice.Pull {
		h.sawCall()
	}
	switch ev.Kind {
	case coservice.Pull:
		if st == coservice.AfterForward {
			run := w.p.Run()
			w.mu.Lock()
			w.pulled = run
			w.mu.Unlock()
		}
		return true
	case coservice.Deliver:
		if st == coservice.BeforeForward {
			h.deliver(w, ev)
		}
		return true
	}
	kd := w.current()
	if kd == nil || kd.seq != ev.Seq {
		if st == coservice.BeforeForward {
			h.rec.Note(w.actor(), ev.Kind, fmt.Sprint(ev.Seq), "of a delivery the replica did not get last")
		}
		if ev.Kind == coservice.Ack && st == coservice.AfterForward {
			h.markSeqAcked(ev.Seq)
		}
		return true
	}
	if ev.Kind != coservice.Ack {
		if st == coservice.BeforeForward {
			kd.count(ev.Kind)
			return true
		}
		h.rec.Note(w.actor(), ev.Kind, kd.brokerID, "forwarded to the broker")
		if ev.Kind == coservice.Term {
			h.markAcked(kd.brokerID) // never redelivered: settled
			h.mu.Lock()
			h.terms = append(h.terms, fmt.Sprintf("%s by %s (delivery %d)", kd.brokerID, w.actor(), kd.attempt))
			h.mu.Unlock()
		}
		return true
	}
	if st == coservice.BeforeForward {
		return h.acking(w, kd)
	}
	kd.mu.Lock()
	op, n := kd.ackOp, kd.ackN
	kd.mu.Unlock()
	if op != nil {
		op.OK("forwarded to the broker")
	}
	e := kd.e.EventID
	if why, about := h.tripAround(false, e, n, "ack", afterAck, e, ""); why != "" {
		h.crash(w, why+": the ack forwarded to the broker", about)
	}
	h.markAcked(kd.brokerID)
	return true
}

// deliver counts a delivery the proxy is about to hand a replica, makes it
// the replica's current one, and holds it at its gate.
func (h *blackbox) deliver(w *replica, ev coservice.Event) {
	h.pubMu.RLock()
	h.mu.Lock()
	brokerID := h.bySeq[ev.Seq]
	h.mu.Unlock()
	e, n, ok := h.delivered(brokerID)
	h.pubMu.RUnlock()
	if !ok {
		h.rec.Note(w.actor(), "deliver", fmt.Sprint(ev.Seq), "a message this rule did not publish")
		return
	}
	kd := &svcDelivery{w: w, brokerID: brokerID, e: e, seq: ev.Seq, attempt: n}
	w.mu.Lock()
	w.cur = kd
	w.mu.Unlock()
	h.firstDelivery(e.EventID, &kd.calls)
	count := fmt.Sprintf(" (the broker's delivery count %d)", ev.Delivered)
	if ev.Delivered == 0 {
		count = "" // a Redis reply carries no delivery count
	}
	h.rec.Note(w.actor(), "deliver", brokerID, fmt.Sprintf("attempt %d%s", n, count))
	h.waitGate(e.EventID)
}

// acking is an ack that reached the proxy: a tripwire kills the replica
// before the broker sees it, the kit may lose it, and an ack with a failed
// effect left is recorded. It says whether the ack goes on to the broker.
func (h *blackbox) acking(w *replica, kd *svcDelivery) bool {
	e := kd.e.EventID
	n := kd.count("ack")
	kd.mu.Lock()
	kd.ackN = n
	kd.mu.Unlock()
	if why, about := h.tripAround(true, e, n, "ack", beforeAck, e, ""); why != "" {
		h.crash(w, why+": the ack reached the proxy, the broker never saw it", about)
		return false
	}
	if left := kd.left(); len(left) > 0 {
		h.ackedAfterFailure(w.actor(), kd.brokerID, left)
	}
	if h.takeLostAck(e) {
		h.rec.Note(w.actor(), "ack", kd.brokerID, "lost by the kit: dropped in the proxy, the broker never sees it")
		return false
	}
	op := h.rec.Invoke(w.actor(), "ack", kd.brokerID)
	kd.mu.Lock()
	kd.ackOp = &op
	kd.mu.Unlock()
	return true
}

func (h *blackbox) markSeqAcked(seq uint64) {
	h.mu.Lock()
	id := h.bySeq[seq]
	h.mu.Unlock()
	if id != "" {
		h.markAcked(id)
	}
}
