package consumer

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/onceproof/tck/co"
)

// msgState is one broker message the kit published in this rule.
type msgState struct {
	brokerID string
	event    co.Event
	attempts int
	acked    bool
	lastSeen time.Time // its latest delivery
}

// publish sends e under brokerID through the transport and tracks it until
// it is acked.
func (w *world) publish(e co.Event, brokerID string) {
	w.track(brokerID, e)
	if err := w.send(e, brokerID); err != nil {
		w.r.Unknown("publishing %s failed: %v", brokerID, err)
	}
}

// publishMany publishes events, each under its event id, from a few
// goroutines at once: a rule of thousands of events (CO-5.2) would
// otherwise wait out one broker round trip per event in turn. The first
// failure ends the rule as publish's does, once every send has returned.
func (w *world) publishMany(events []co.Event) {
	const senders = 4
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		mu    sync.Mutex
		first error
		which string
	)
	for _, e := range events {
		w.track(e.EventID, e)
	}
	for range min(senders, len(events)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(events) || w.ctx.Err() != nil {
					return
				}
				e := events[i]
				if err := w.send(e, e.EventID); err != nil {
					mu.Lock()
					if first == nil {
						first, which = err, e.EventID
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		w.r.Unknown("publishing %s failed: %v", which, first)
	}
}

// send is publish's send and its record, without ending the rule.
func (w *world) send(e co.Event, brokerID string) error {
	op := w.rec.Invoke("kit", "publish", brokerID)
	where, dup, err := w.tr.send(e, brokerID)
	switch {
	case err != nil:
		op.Info(err.Error())
	case dup:
		op.OK("dropped by the broker as a duplicate")
		w.markAcked(brokerID) // nothing will be delivered for it
	default:
		op.OK("at " + where)
	}
	return err
}

// track registers a message put on the topic (by publish, or by an outbox
// relay), so settle waits for it.
func (w *world) track(brokerID string, e co.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.msgs[brokerID]; !ok {
		w.msgs[brokerID] = &msgState{brokerID: brokerID, event: e}
		w.order = append(w.order, brokerID)
		w.unacked++
	}
}

// delivered counts one delivery of brokerID and returns its event and the
// delivery's number; false for a message this rule did not publish.
func (w *world) delivered(brokerID string) (co.Event, int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st, ok := w.msgs[brokerID]
	if !ok {
		return co.Event{}, 0, false
	}
	st.attempts++
	st.lastSeen = time.Now()
	return st.event, st.attempts, true
}

// attempts is how many times brokerID was delivered.
func (w *world) attempts(brokerID string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if st, ok := w.msgs[brokerID]; ok {
		return st.attempts
	}
	return 0
}

func (w *world) markAcked(brokerID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if st, ok := w.msgs[brokerID]; ok && !st.acked {
		st.acked = true
		w.unacked--
		w.acks++
		if !st.lastSeen.IsZero() {
			w.slowestAck = max(w.slowestAck, time.Since(st.lastSeen))
		}
		if _, ok := w.ackedAt[st.event.EventID]; !ok {
			w.ackedAt[st.event.EventID] = time.Now()
		}
	}
}

// ackCount is how many messages were acked so far: settle's progress.
func (w *world) ackCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acks
}

// anyPending reports whether a message is not yet acked, without the walk
// pending makes (settle polls it; CO-5.2 tracks thousands of messages).
func (w *world) anyPending() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.unacked > 0
}

// pending lists copies of the messages not yet acked, in publish order.
func (w *world) pending() []msgState {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []msgState
	for _, id := range w.order {
		if st := w.msgs[id]; !st.acked {
			out = append(out, *st)
		}
	}
	return out
}

// loseAcks makes the kit swallow the next n acks of event: the consumer is
// told the ack went through, the broker never sees it (seed 002, 三: the ack
// request itself can be lost), so the broker redelivers after its ack wait.
func (w *world) loseAcks(event string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.loseAck[event] += n
}

// takeLostAck consumes one lost ack of event, if one is due.
func (w *world) takeLostAck(event string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.loseAck[event] > 0 {
		w.loseAck[event]--
		w.lostAcks++
		return true
	}
	return false
}
