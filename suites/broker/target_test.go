package broker_test

import (
	"context"
	"testing"

	"github.com/onceproof/tck/internal/registry"

	"github.com/onceproof/tck/adapters/broker/nats"
)

// embedded starts the kit's embedded NATS target with client and binds the
// suite to it, as the registry does; the server stops when t ends.
func embedded(t testing.TB, client nats.Client) registry.BrokerBinding {
	t.Helper()
	nt, err := nats.RunEmbedded(context.Background(), nats.WithClient(client))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nt.Stop() })
	return registry.BrokerTarget(nt)
}
