package eventstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/eventstore/memory"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/suites/eventstore"
)

// TestMyStore is all a backend author writes: every ES rule runs as a
// subtest of it against your store.
//
// The report an architect attaches to a review comes from this same test:
//
//	TCK_REPORT_DIR=$(mktemp -d) go test ./examples/eventstore
//
// writes results.json, report.md, report.html, junit.xml and the histories
// into that folder, as `tck run` does; TestWithGinkgo's rules go into the
// same report. eventstore.ReportTo(dir) as a third argument of Check does
// it from the code.
func TestMyStore(t *testing.T) {
	eventstore.Check(t, myTarget())
}

// myTarget is your store and what it declares; both entry points take it.
func myTarget() eventstore.Target {
	db := memory.NewDB() // replace with your store: one shared backend ...
	return eventstore.Target{
		// ... and a factory that opens a handle on it for each rule.
		Open: func(ctx context.Context) (es.EventStore, error) { return db.Open(), nil },
		Caps: es.Capabilities{
			AcceptsVersionGap: false,       // what your store declares; ES-1.11 measures it
			PreCheck:          newPreCheck, // your request-id pre-check chain, if you have one (ES-3.1)
		},
		// The race rules run until enough trials really overlapped (459),
		// for 30 s at most by default; at the cap they decide on the
		// trials they reached and state their power, unknown only below a
		// floor (90). An in-memory store's calls take microseconds and
		// overlap rarely on a busy machine, so this one gets a longer cap;
		// a store behind a database needs none (its calls overlap while
		// they wait for its lock). A slow store that needs more for every
		// rule sets Timeout (default 60 s): the race cap is half of it.
		Race: eventstore.RaceConfig{Cap: time.Minute},
	}
}

// newPreCheck builds a request-id pre-check chain: a "maybe" from the fast
// checker is confirmed by the authoritative query before a request is
// rejected; with no authority, or a failing one, it is rejected (fail
// closed). Leave Caps.PreCheck nil if your store has no such chain: ES-3.1
// is then not applicable.
func newPreCheck(fast es.FastChecker, authority es.ExistenceChecker) es.PreChecker {
	return preCheck{fast, authority}
}

type preCheck struct {
	fast      es.FastChecker
	authority es.ExistenceChecker
}

func (p preCheck) Admit(ctx context.Context, agg es.AggregateID, requestID string) (bool, error) {
	if !p.fast.MaybeDuplicate(agg, requestID) {
		return true, nil
	}
	if p.authority == nil {
		return false, nil
	}
	exists, err := p.authority.RequestIDExists(ctx, agg, requestID)
	if err != nil {
		return false, err
	}
	return !exists, nil
}
