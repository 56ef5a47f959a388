package consumer

import (
	"context"

	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/mq"
)

// noBroker is why a rule cannot run without a broker: the embedded server is
// an option of its own package, so a test that names its broker links none.
const noBroker = "the Target names no broker and no embedded one was given: set Target.Broker, or pass embedded.NATS() of suites/consumer/embedded to Check or Register"

// embeddedURL starts a NATS JetStream server for the rule r runs, stopped
// by r's cleanups, and returns its client URL: the broker of a Target that
// names none, and of every Service whose broker is not given.
func embeddedURL(r *spec.R, t Target) (string, func(context.Context) (mq.Broker, error)) {
	if t.hooks.Embedded == nil {
		r.Unknown(noBroker)
	}
	e, err := t.hooks.Embedded(r.Context())
	if err != nil {
		r.Unknown("starting the rule's embedded NATS server: %v", err)
	}
	r.DeferCleanup(func() { _ = e.Stop() })
	r.Ev.Figure("broker", e.Version, "")
	return e.URL, e.Open
}
