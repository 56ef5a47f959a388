// Package consumer is the consumer conformance suite: the CO rules of the
// catalog as Ginkgo specs. The consumer under test handles events delivered
// by a real broker and writes its side effects through sinks the kit
// provides and observes (package sinks); the kit redelivers, edits, replays
// stale versions, hands one event to two workers at once, loses acks, and
// ends instances at points it controls, then compares every sink with a
// model computed from the schedule alone.
//
// A backend author plugs a consumer in with one call,
//
//	consumer.Register(consumer.Target{Broker: ..., New: func(ctx context.Context, env co.Env) (co.Consumer, error) { ... }})
//
// from a Ginkgo suite, or with consumer.Check(t, target) from a plain Go
// test (see examples/consumer).
package consumer

import (
	"fmt"
	"strings"

	"github.com/onsi/ginkgo/v2"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/spec"
)

// Register registers every CO rule against t. Call it inside a Ginkgo suite
// (before RunSpecs), once per target.
func Register(t Target) {
	t.Timing = t.Timing.withDefaults()
	if len(t.Declared.Scopes) == 0 {
		t.Declared.Scopes = []string{co.ScopeIndex, co.ScopeNotify}
	}
	if t.Events < 200 {
		t.Events = 200
	}
	var caps []catalog.Capability
	if has(t.Declared.Scopes, co.ScopeIndex) && has(t.Declared.Scopes, co.ScopeNotify) {
		caps = append(caps, catalog.CapTwoScopes)
	}
	if t.Outbox != nil {
		caps = append(caps, catalog.CapOutbox)
	}
	s := spec.New("consumer", caps...)
	if t.Timeout > 0 {
		s.Timeout = t.Timeout
	}
	ginkgo.Describe("consumer", func() {
		registerScopes(s, t)
		registerCrashes(s, t)
		registerHorizon(s, t)
		registerOutbox(s, t)
		registerSchedule(s, t)
	})
}

func has(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// run is one rule's driver over a harness: steps are published one at a
// time and each is acked before the next, so the model knows the order.
type run struct {
	*harness
	model   *Model
	replays int
}

func newRun(h *harness) *run {
	return &run{harness: h, model: NewModel(h.t.Declared.Scopes)}
}

// step publishes one step, waits until it is acked, and feeds the model.
func (r *run) step(s Step) {
	if s.Crash != nil {
		r.arm(*s.Crash)
	}
	if s.LoseAck {
		r.loseAcks(s.Event.EventID, 1)
	}
	switch s.Kind {
	case StepNew:
		r.publish(s.Event, s.Event.EventID)
	case StepReplay:
		// A replay by a recovery process (seed 002, 五): the same event id
		// under a broker message id of its own, so that the broker's
		// producer de-dupe, which is not the consumer's, lets it through.
		r.replays++
		r.publish(s.Event, fmt.Sprintf("%s#replay-%d", s.Event.EventID, r.replays))
	case StepTwin:
		r.addGate(s.Event.EventID, 2)
		r.publish(s.Event, s.Event.EventID+"#a")
		r.publish(s.Event, s.Event.EventID+"#b")
	}
	r.settle()
	r.model.Apply(s.Event)
	r.disarm()
}

// disarm drops plans the step did not reach (a consumer that skipped a
// duplicate makes no sink call to crash in), so they cannot fire later.
func (r *run) disarm() {
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := r.plans[:0]
	for _, p := range r.plans {
		if p.fired {
			kept = append(kept, p)
		} else {
			r.rec.Note("kit", "disarm", p.Event, string(p.Point)+" "+p.Scope+" not reached")
		}
	}
	r.plans = kept
}

// diff compares the sinks with the model now.
func (r *run) diff() []string {
	effects := append(r.index.Effects(), r.notifier.Effects()...)
	return r.model.Diff(effects, r.index.Docs())
}

// expectModel fails the rule when a sink differs from the model, with the
// history of the first message that differs as the smallest history.
func (r *run) expectModel(why string) {
	d := r.diff()
	r.ev.Figure("index writes observed", len(r.index.Effects()), "")
	r.ev.Figure("notifications observed", len(r.notifier.Effects()), "")
	if len(d) == 0 {
		return
	}
	for _, line := range d {
		r.ev.Notef("differs from the model: %s", line)
	}
	if m := messageOf(d[0]); m != "" {
		r.ev.Smallest(opsAbout(r.rec.Ops(), m))
	}
	more := ""
	if len(d) > 1 {
		more = fmt.Sprintf(" (and %d more differences)", len(d)-1)
	}
	ginkgo.Fail(fmt.Sprintf("%s: %s%s", why, d[0], more))
}

// messageOf extracts the message id from a Diff line.
func messageOf(line string) string {
	if strings.HasPrefix(line, "(") {
		if i := strings.IndexByte(line, ','); i > 0 {
			return line[1:i]
		}
	}
	if strings.HasPrefix(line, "index ") {
		rest := strings.TrimPrefix(line, "index ")
		if i := strings.IndexByte(rest, ':'); i > 0 {
			return rest[:i]
		}
	}
	return ""
}
