package consumer

import (
	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/spec"
)

// world is what a rule body drives: the in-process harness (a consumer
// built against package co, crashed inside the test binary) or the
// service harness (a consumer service run as its own process, killed with
// SIGKILL). The rule bodies are the same for both, so the rules are.
type world interface {
	event(base string, version int) co.Event
	suffix() string // what ends every message id of the rule and run
	play(s step)
	attempts(brokerID string) int
	fired(event string) int
	expectModel(why string)
	injectFault(f fault)
	faultCount() int
	expectAckedOnlyAfterEffects()
	trace(event string) []string
	raced(event string) bool
	diff() []difference
}

// open builds the rule's world for t.
func open(r *spec.R, t Target) world {
	if t.Service != nil {
		return newSvcHarness(r, t)
	}
	return newHarness(r, t, workers)
}

func (h *harness) suffix() string { return "@" + h.tag }
