package kithooks

import (
	"context"
	"crypto/tls"
	"time"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/coservice"
	"github.com/onceproof/tck/internal/sinks"
	"github.com/onceproof/tck/mq"
)

// Consumer is the kit's hooks for the consumer suite: the parts that link a
// broker's server or clients, given only by who wants them (tck run, the
// option of suites/consumer/embedded), so an author's test of a consumer
// links the broker it names and no other.
type Consumer struct {
	// Embedded starts a NATS JetStream server of one rule's own: the broker
	// of a Target that names none, and of a Service whose broker is not
	// given. The rule stops it.
	Embedded func(ctx context.Context) (EmbeddedNATS, error)
	// Channel opens a rule's channel to a consumer service's broker: kind
	// is a coservice.Broker* value, url the server (NATS, Redis) or the
	// comma-separated seeds (Kafka).
	Channel func(ctx context.Context, kind, url, name string, ackWait time.Duration, maxDeliver int, tlsCfg *tls.Config) (coservice.Channel, error)
	// Store opens a handle on the durable de-dupe store in the file at
	// path, one per in-process consumer instance (internal/sqlstore). nil:
	// the store is in memory (sinks.MemStore), which links no SQLite.
	Store func(path string, clock co.Clock) (sinks.Store, error)
}

// EmbeddedNATS is a rule's own NATS server.
type EmbeddedNATS struct {
	URL     string
	Version string // as the evidence names it
	Open    func(ctx context.Context) (mq.Broker, error)
	Stop    func() error
}
