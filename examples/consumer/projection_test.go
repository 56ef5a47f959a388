package projection_test

import (
	"context"
	"testing"

	"github.com/onceproof/tck/adapters/broker/nats"
	projection "github.com/onceproof/tck/examples/consumer"
	"github.com/onceproof/tck/mq"
	tck "github.com/onceproof/tck/suites/consumer"
)

// TestProjectionConformance runs every CO rule against the projection, over
// an embedded NATS JetStream server. Rules that need what the projection
// does not declare (a second scope, an outbox) are skipped with the reason.
func TestProjectionConformance(t *testing.T) {
	srv, err := nats.StartEmbedded(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	tck.Check(t, tck.Target{
		Broker:   func(ctx context.Context) (mq.Broker, error) { return nats.Connect(ctx, srv.URL(), nats.Options{}) },
		New:      projection.New,
		Declared: projection.Declared,
	})
}
