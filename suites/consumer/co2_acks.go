package consumer

import (
	"fmt"

	"github.com/onceproof/tck/internal/spec"
)

// registerAckFailures registers CO-2.6: acks that fail as brokers' acks
// do, on first versions and on an edit, each followed by a replay.
func registerAckFailures(s *spec.Set, t Target) {
	s.It("CO-2.6", func(r *spec.R) {
		if t.Service != nil {
			r.NotApplicable("a consumer service's acks are its own client's calls: the kit's proxy can drop one (CO-1.1 does) but cannot make the service's ack call return an error")
		}
		h := openInproc(r, t, openOpts{})
		cases := []struct {
			m    string
			k    int
			kind faultKind
		}{{"m-ack-a", 1, faultError}, {"m-ack-b", 1, faultTimeout}, {"m-ack-a", 2, faultError}, {"m-ack-b", 2, faultTimeout}}
		fired := 0
		for _, c := range cases {
			e := h.event(c.m, c.k)
			before := h.ackFailures()
			h.play(step{kind: stepNew, event: e, ackFault: c.kind})
			if h.ackFailures() == before {
				r.Ev.Notef("case %s %s: the consumer never acked it through the kit", e.EventID, c.kind)
				continue
			}
			fired++
			what := "an error before the broker took it"
			if c.kind == faultTimeout {
				what = "a deadline error after the broker took it"
			}
			r.Ev.Figure(fmt.Sprintf("deliveries of %s (ack %s)", e.EventID, c.kind), h.attempts(e.EventID), "")
			h.expectModel(fmt.Sprintf("the ack of %s failed with %s", e.EventID, what))
			h.play(step{kind: stepReplay, event: e})
			h.expectModel(fmt.Sprintf("a replay of %s, whose ack had failed with %s", e.EventID, what))
		}
		if fired == 0 {
			r.Unknown("the consumer made no ack the kit could fail")
		}
		r.Ev.Figure("failed acks", fired, "first versions and edits; an error while the instance lives, a timeout after the broker took the ack")
		r.Ev.Notef("after %d failed acks, no effect was undone and none repeated by the redelivery or a replay", fired)
	})
}

// ackFailures is how many acks the kit failed so far.
func (w *world) ackFailures() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acksFailed
}
