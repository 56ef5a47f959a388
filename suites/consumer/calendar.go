package consumer

import (
	"fmt"
	"sync"
	"sync/atomic"
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

// calendarClock is the scaled clock shifted so that its first reading
// (by the consumer, its store or a sink, whoever reads first) is a drawn
// instant: the kit's set-up, however slow, does not eat into the lead.
type calendarClock struct {
	scaled *sinks.Scaled
	start  time.Time
	once   sync.Once
	shift  atomic.Int64
}

// Now implements co.Clock.
func (c *calendarClock) Now() time.Time {
	c.once.Do(func() { c.shift.Store(int64(c.start.Sub(c.scaled.Now()))) })
	return c.scaled.Now().Add(time.Duration(c.shift.Load()))
}

// boundaryLead bounds how long before the boundary the clock's first
// reading is (seed time): sooner than the first redeliveries (the ack wait
// is 2 minutes, CO-3.1's horizon 11).
const (
	minLead = 3 * time.Minute
	maxLead = 9 * time.Minute
)

// startClock draws the clock's start for the rule: before a boundary of
// any class, or (midnight) one that is at least a day boundary.
func (w *world) startClock(c *sinks.Scaled, midnight bool) *calendarClock {
	g := gen.Calendar()
	if midnight {
		g = gen.Midnight()
	}
	edge := gen.Draw(w.src, g)
	lead := minLead + time.Duration(w.src.Rand().Int64N(int64(maxLead-minLead)))
	start := edge.At.Add(-lead)
	w.edge = edge
	w.ev.Figure("consumer clock start", start.Format(time.RFC3339), fmt.Sprintf("its first reading: %s of seed time before a %s boundary (%s)", lead.Round(time.Second), edge.Class, edge.At.Format(time.RFC3339)))
	return &calendarClock{scaled: c, start: start}
}

// crossed reports whether the boundary lies after a and at or before b.
func (w *world) crossed(a, b time.Time) bool {
	return !w.edge.At.IsZero() && a.Before(w.edge.At) && !b.Before(w.edge.At)
}
