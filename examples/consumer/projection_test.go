package consumer

import (
	"context"
	"testing"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/mq"
	tck "github.com/onceproof/tck/suites/consumer"
)

// TestProjection runs every CO rule against the projection as a subtest
// named by its id, over an embedded NATS JetStream server:
//
//	go test -run 'TestProjection/CO-1.1' -v
//
// runs one rule. Rules that need what the projection does not declare (a
// second scope, an outbox) are skipped with the reason; a rule the kit could
// not decide fails the test with its reason.
func TestProjection(t *testing.T) {
	srv, err := nats.StartEmbedded(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	tck.Check(t, tck.Target{
		Broker:   func(ctx context.Context) (mq.Broker, error) { return nats.Connect(ctx, srv.URL(), nats.Options{}) },
		New:      New,
		Declared: Declared,
	})
}
