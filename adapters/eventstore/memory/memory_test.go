package memory_test

import (
	"context"
	"testing"

	"github.com/onceproof/tck/adapters/eventstore/memory"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/precheck"
	"github.com/onceproof/tck/suites/eventstore"
)

// TestMemory runs the whole suite against the reference store: every rule,
// the race rules to their power target, must pass.
func TestMemory(t *testing.T) {
	db := memory.NewDB()
	eventstore.Check(t, eventstore.Target{
		Open: func(context.Context) (es.EventStore, error) { return db.Open(), nil },
		Caps: es.Capabilities{PreCheck: precheck.New},
	})
}
