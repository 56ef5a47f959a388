package kithooks

import (
	"context"
	"time"

	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
)

// EventStore is the kit's hooks for the event-store suite.
type EventStore struct {
	// MaxWait, when longer than the default (1.5 s), is the time horizon of
	// the ES-4.1 schedule: how long after a write its retries and queries
	// may come (tck run --max-wait). When longer than 5.5 s it is also how
	// old ES-4.3's oldest request ids are at their retry; when longer than
	// 5 s it is the fill budget of ES-1.17 and ES-1.18 (ES-1.17's deadline
	// grows to hold it), which a slow store needs to reach 2^16 versions.
	MaxWait time.Duration
	// Disrupt, when set, applies a fault (a restart, a kill) while each ES-2
	// race rule runs. The rule calls it once, in a goroutine of its own,
	// after its first trials, goes on racing while it lasts (its cap is
	// extended by the fault's duration, and it does not stop on its power
	// target before the fault is over), and waits for it to return before
	// judging. Trials from the fault on may see errors that are not conflicts:
	// those appends are indeterminate and the trial is judged on what is
	// stored once the store answers again (every reported success is stored,
	// no refused stream is stored, no version is stored twice). An error
	// from Disrupt means the fault could not be applied: the rule is unknown
	// unless it failed anyway. A rule that fails before the fault is due
	// ends without calling Disrupt. ctx is the rule's: Disrupt must return
	// when it is cancelled. A fault run also sets the Target's Timeout to
	// cover the race budget, the fault and the store's recovery.
	Disrupt func(ctx context.Context, rule string, log verdict.Log) error
	// Before, when set, runs at the start of every rule's body: the kit's
	// wiring of a driver adapter turns a failure during which the adapter
	// broke the protocol into unknown there (R.Excuse).
	Before spec.Body
}
