package memory_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/eventstore/memory"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/precheck"
	"github.com/onceproof/tck/suites/eventstore"
)

// TestPaced runs the suite, as an author would with Check and the default
// Target, against the reference at the pace of a networked database
// (appends of 2-5 ms behind one lock): a correct store, so every rule must
// pass, whatever the machine's load (the Target's defaults, with the kit's
// pre-check chain declared so that ES-3.1 runs too). The self-test runs it on every make
// test (eventstore/memory-paced); this is the author's path, for measuring
// it again: TCK_PACED=1 go test -count=5 -run TestPaced ./adapters/eventstore/memory/
//
// ES-1.17 (65540 appends to one aggregate, minutes at this pace) is
// skipped here, naming the time it would need: its fill's budget is 5 s
// of the default Target, and a skip for pace does not fail Check.
func TestPaced(t *testing.T) {
	if os.Getenv("TCK_PACED") == "" {
		t.Skip("TCK_PACED=1 runs it (the self-test runs the same store)")
	}
	db := memory.NewPaced(2*time.Millisecond, 5*time.Millisecond)
	eventstore.Check(t, eventstore.Target{
		Open: func(context.Context) (es.EventStore, error) { return db.Open(), nil },
		Caps: es.Capabilities{PreCheck: precheck.New}, // ES-3.1 too
	})
}
