package consumer

import (
	"github.com/onceproof/tck/co"
)

// msgState is one broker message the kit published in this rule.
type msgState struct {
	brokerID string
	event    co.Event
	attempts int
	acked    bool
}

// publish sends e under brokerID and tracks it until it is acked.
func (h *harness) publish(e co.Event, brokerID string) {
	h.track(brokerID, e)
	op := h.rec.Invoke("kit", "publish", brokerID)
	ack, err := h.broker.Publish(h.ctx, h.topic, co.Message(e, brokerID))
	if err != nil {
		op.Info(err.Error())
		h.r.Unknown("publishing %s failed: %v", brokerID, err)
	}
	if ack.Duplicate {
		op.OK("dropped by the broker as a duplicate")
		h.markAcked(brokerID) // nothing will be delivered for it
		return
	}
	op.OK("at " + ack.Position)
}

// track registers a message put on the topic (by publish, or by an outbox
// relay), so settle waits for it.
func (h *harness) track(brokerID string, e co.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.msgs[brokerID]; !ok {
		h.msgs[brokerID] = &msgState{brokerID: brokerID, event: e}
		h.order = append(h.order, brokerID)
	}
}

// delivered counts one delivery of brokerID and returns its event; false
// for a message this rule did not publish.
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

// pending lists copies of the messages not yet acked, in publish order.
func (h *harness) pending() []msgState {
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
