package example_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/onceproof/tck/adapters/eventstore/memory"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/precheck"
	"github.com/onceproof/tck/suites/eventstore"
)

// TestMyEventStore is all a backend author writes: a Ginkgo suite that
// registers the ES rules against a factory for their store. Rules the store
// cannot decide show as skips whose message starts with the verdict
// ("unknown: ...", "not-applicable: ...").
func TestMyEventStore(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "my event store: onceproof conformance")
}

var _ = Describe("my event store", func() {
	db := memory.NewDB() // replace with your store: one shared backend ...
	eventstore.Register(eventstore.Target{
		// ... and a factory that opens a handle on it for each rule.
		Open: func(ctx context.Context) (es.EventStore, error) { return db.Open(), nil },
		Caps: es.Capabilities{
			AcceptsVersionGap: false,        // what your store declares; ES-1.11 measures it
			PreCheck:          precheck.New, // your request-id pre-check chain, if you have one (ES-3.1)
		},
	})
})
