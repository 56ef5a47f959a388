package consumer

import (
	"fmt"
	"time"

	"github.com/onceproof/tck/internal/gen"
	"github.com/onceproof/tck/internal/sinks"
)

// The consumer's clock starts at an instant drawn for the rule, a few seed
// minutes before a calendar boundary (the top of an hour, a midnight, the
// first of a month, New Year, the days around 29 February), so the rule's
// scaled time crosses it early on: a de-dupe record kept per hour or per
// calendar day, or a lease read across a date change, shows. The kit's own
// waits are on the underlying scaled clock; only what the consumer and its
// sinks read is shifted.

// calendarClock is the scaled clock shifted to start at a drawn instant.
type calendarClock struct {
	*sinks.Scaled
	shift time.Duration
}

func (c calendarClock) Now() time.Time { return c.Scaled.Now().Add(c.shift) }

// boundaryLead bounds how long before the boundary the clock starts (seed
// time): later than the kit's set-up (a few hundred ms real at x1200 is a
// few seed minutes), sooner than the first redeliveries.
const (
	minLead = 5 * time.Minute
	maxLead = 10 * time.Minute
)

// startClock draws the clock's start for the rule: before a boundary of
// any class, or (midnight) one that is at least a day boundary.
func (w *world) startClock(c *sinks.Scaled, midnight bool) calendarClock {
	g := gen.Calendar()
	if midnight {
		g = gen.Midnight()
	}
	edge := gen.Draw(w.src, g)
	lead := minLead + time.Duration(w.src.Rand().Int64N(int64(maxLead-minLead)))
	start := edge.At.Add(-lead)
	cc := calendarClock{Scaled: c, shift: start.Sub(c.Now())}
	w.edge = edge
	w.ev.Figure("consumer clock start", start.Format(time.RFC3339), fmt.Sprintf("%s of seed time before a %s boundary (%s)", lead.Round(time.Second), edge.Class, edge.At.Format(time.RFC3339)))
	return cc
}

// crossed reports whether the boundary lies after a and at or before b.
func (w *world) crossed(a, b time.Time) bool {
	return !w.edge.At.IsZero() && a.Before(w.edge.At) && !b.Before(w.edge.At)
}
