package consumer

import (
	"fmt"
	"strings"
	"time"

	"github.com/onsi/gomega"
)

// settled reports whether every published message is acked and no Handle
// call is running.
func (h *harness) settled() bool {
	return len(h.pending()) == 0 && h.inflight.Load() == 0
}

// settle waits until the step is settled. If that does not happen within
// Timing.Settle, the rule ends: a consumer that blocked is unknown (the
// deadline is the evidence), one that panicked or returned errors fails with
// the panic or error, one that just never acked fails with what is pending.
func (h *harness) settle() {
	// Not settling in time is judged below, by why.
	if attentive(h.ctx, h.tm.Settle, 2*time.Millisecond, h.settled) {
		return
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
	h.r.Expect(waiting).To(gomega.BeEmpty(), "the consumer never acked %s within %s", strings.Join(waiting, ", "), h.tm.Settle)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// gate holds the first n deliveries of its events until all n arrived (or
// a bound passed), then releases them together: two workers handling the
// same event (CO-1.5), or two versions of one message (CO-1.7), at the same
// moment.
type gate struct {
	n       int
	arrived int
	open    chan struct{}
	raced   bool
}

func (h *harness) addGate(n int, events ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := &gate{n: n, open: make(chan struct{})}
	for _, e := range events {
		h.gates[e] = g
	}
}

// raced reports whether the gate of event held all its deliveries at once.
func (h *harness) raced(event string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	g, ok := h.gates[event]
	return ok && g.raced
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
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-g.open:
	case <-t.C:
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
