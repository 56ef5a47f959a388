package consumer

import (
	"context"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/mq"
)

// embeddedURL starts a NATS JetStream server in this process for the rule
// r runs, stopped by r's cleanups, and returns its client URL: the broker
// of a Target that names none, and of every Service.
func embeddedURL(r *spec.R) string {
	e, err := nats.StartEmbedded(r.Context())
	if err != nil {
		r.Unknown("starting the rule's embedded NATS server: %v", err)
	}
	r.DeferCleanup(func() { _ = e.Stop() })
	r.Ev.Figure("broker", "nats-server "+nats.Version+" (embedded, the rule's own)", "")
	return e.URL()
}

// embeddedBroker opens handles on the rule's embedded server.
func embeddedBroker(r *spec.R) func(context.Context) (mq.Broker, error) {
	url := embeddedURL(r)
	return func(ctx context.Context) (mq.Broker, error) { return nats.Connect(ctx, url, nats.Options{}) }
}
