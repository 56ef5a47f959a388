// Package embedded gives the consumer suite a NATS JetStream server of each
// rule's own, in the test's process, for a Target that names no broker:
//
//	consumer.Check(t, consumer.Target{New: newConsumer}, embedded.NATS())
//
// It is a package of its own because it links nats-server and the kit's
// broker clients: a test whose Target names its broker does without it.
package embedded

import (
	"context"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/cochannel"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/sinks"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/sqlstore"
	"github.com/onceproof/tck/mq"
	"github.com/onceproof/tck/suites/consumer"
)

// NATS is the option of Check and Register that gives every rule a NATS
// JetStream server of its own when the Target names no broker, stopped at
// the rule's end. A Target.Service needs it too: with it come the kit's
// channels to a service's broker (the embedded server, or the NATS, Redis
// or Kafka server the Service names).
func NATS() consumer.Option {
	return spec.With(kithooks.Consumer{Embedded: start, Channel: cochannel.Channel, Store: openStore})
}

// openStore opens the SQLite de-dupe store: a file each instance opens on
// its own, as a consumer's database would be.
func openStore(path string, clock co.Clock) (sinks.Store, error) {
	return sqlstore.OpenStore(path, clock)
}

func start(ctx context.Context) (kithooks.EmbeddedNATS, error) {
	e, err := nats.StartEmbedded(ctx)
	if err != nil {
		return kithooks.EmbeddedNATS{}, err
	}
	url := e.URL()
	return kithooks.EmbeddedNATS{
		URL:     url,
		Version: "nats-server " + nats.Version + " (embedded, the rule's own)",
		Open:    func(ctx context.Context) (mq.Broker, error) { return nats.Connect(ctx, url, nats.Options{}) },
		Stop:    e.Stop,
	}, nil
}
