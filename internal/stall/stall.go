// Package stall watches the kit's own scheduling. Timed rules measure a
// target with the kit's clock, and the kit's process can be paused by its
// host (SIGSTOP, a VM stall, swap, a long garbage collection): a moment the
// kit took late is then the kit's delay, not the target's. While anyone
// holds the watcher (Hold), a heartbeat goroutine wakes every Tick and
// records each wake-up that came late; a rule asks whether such a pause
// overlapped its measurement before it blames the target.
//
// Importing the package starts nothing. The heartbeat runs from the first
// Hold to the last release; pauses are only known for times when it ran, so
// a caller holds it across every interval it asks about.
package stall

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Tick is the heartbeat's period: the resolution of what it sees.
const Tick = 10 * time.Millisecond

// Floor is the shortest lateness recorded as a pause: below it is the
// ordinary jitter of a loaded host, far below any rule's tolerance.
const Floor = 25 * time.Millisecond

// maxPauses bounds the record; the oldest pause goes first. The lag
// marks, one per wake-up, are bounded alike (about 11 minutes of them).
const maxPauses = 1 << 16

// lagMark is the heartbeat's lateness summed from its start to a wake-up.
type lagMark struct {
	at  time.Time
	cum time.Duration
}

// Pause is a stretch in which the heartbeat did not run: the kit's process
// was not scheduled from From to To (monotonic readings), for Len.
type Pause struct {
	From, To time.Time
	// Len is how long the kit was not scheduled. It can exceed To-From:
	// a host suspended stops the monotonic clock but not the wall clock,
	// and the target's clock runs on.
	Len time.Duration
}

// Span sums up the pauses that overlapped an interval.
type Span struct {
	Count   int
	Total   time.Duration // the time the kit was not scheduled in all
	Longest Pause
	// Lag is the heartbeat's lateness summed over the interval, each
	// wake-up below the Floor included: on an overloaded host every
	// wake-up comes a little late and no single one is a pause, yet the
	// kit's polls and timers lose that much time all the same.
	Lag time.Duration
}

// Paused says whether a pause overlapped the interval at all.
func (s Span) Paused() bool { return s.Count > 0 }

// The wording by which a reason names the kit's own lateness: every
// reason that puts an undecided verdict down to the kit's own timing says
// one of these, and the kit's own tests (Named) accept an undecided rule
// only when its reason does.
const (
	// PhraseLate starts a lateness summed over many wake-ups, or one step
	// of the kit's that went out late (Late).
	PhraseLate = "the kit's own process ran "
	// PhraseNotScheduled starts a pause.
	PhraseNotScheduled = "the kit was not scheduled for "
)

// Named says whether reason names the kit's own lateness in this
// package's wording.
func Named(reason string) bool {
	return strings.Contains(reason, PhraseLate) || strings.Contains(reason, PhraseNotScheduled)
}

// Late names one step of the kit's that went out late: what was due at
// due and went out at took (offsets from the same start).
func Late(what string, due, took time.Duration) string {
	return fmt.Sprintf("%slate: %s, due at %s, went out at %s", PhraseLate, what, seconds(due), seconds(took))
}

// String names the pause as a reason does.
func (s Span) String() string {
	if s.Count == 0 && s.Lag >= Floor {
		return fmt.Sprintf("%s%s late in all during the measurement (every wake-up a little late: an overloaded host)", PhraseLate, seconds(s.Lag))
	}
	if s.Count == 0 {
		return "the kit was scheduled throughout"
	}
	var msg string
	if s.Count == 1 {
		msg = fmt.Sprintf("%s%s during the measurement", PhraseNotScheduled, seconds(s.Longest.Len))
	} else {
		msg = fmt.Sprintf("%s%s during the measurement (%d pauses, %s in all)", PhraseNotScheduled, seconds(s.Longest.Len), s.Count, seconds(s.Total))
	}
	if s.Lag-s.Total >= Floor {
		// The lateness is what explained the miss: say it.
		msg += fmt.Sprintf(", and ran %s late in all (its wake-ups each a little late)", seconds(s.Lag))
	}
	return msg
}

func seconds(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// watcher is the one heartbeat of the process: a pause stops every
// goroutine at once, so one suffices however many hold it.
var w struct {
	mu      sync.Mutex
	holders int
	stop    chan struct{}
	done    chan struct{}
	pauses  []Pause
	lag     []lagMark // every wake-up, in time order
	cum     time.Duration
	since   time.Time // when the heartbeat started (zero: not running)
	last    time.Time // the heartbeat's latest wake-up
}

// Hold starts the heartbeat unless it runs already, and returns the
// release; the heartbeat stops, and its record is dropped, when the last
// holder released it. Release is safe to call more than once.
func Hold() (release func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.holders++
	if w.holders == 1 {
		w.stop, w.done = make(chan struct{}), make(chan struct{})
		w.pauses, w.lag, w.cum, w.since = nil, nil, 0, time.Now()
		w.last = w.since
		go beat(w.stop, w.done, w.since)
	}
	var once sync.Once
	return func() { once.Do(unhold) }
}

func unhold() {
	w.mu.Lock()
	w.holders--
	if w.holders > 0 {
		w.mu.Unlock()
		return
	}
	stop, done := w.stop, w.done
	w.stop, w.done, w.pauses, w.lag, w.since = nil, nil, nil, nil, time.Time{}
	w.mu.Unlock()
	close(stop)
	<-done
}

// beat is the heartbeat. The wall clock is read too: a suspended host
// stops the monotonic clock, the wall clock catches up on resume.
func beat(stop <-chan struct{}, done chan<- struct{}, prev time.Time) {
	defer close(done)
	t := time.NewTimer(Tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := time.Now()
		p, late := gap(prev, now)
		beaten(p, late, now)
		prev = now
		t.Reset(Tick)
	}
}

// gap is the pause between two wake-ups, if the second came late.
func gap(prev, now time.Time) (Pause, bool) {
	late := max(now.Sub(prev), now.Round(0).Sub(prev.Round(0))) - Tick
	return Pause{From: prev.Add(Tick), To: now, Len: late}, late >= Floor
}

// beaten records a wake-up at now and the pause before it, if any.
func beaten(p Pause, late bool, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.since.IsZero() {
		return
	}
	w.last = now
	w.cum += max(p.Len, 0)
	if len(w.lag) == maxPauses {
		w.lag = append(w.lag[:0], w.lag[maxPauses/2:]...)
	}
	w.lag = append(w.lag, lagMark{at: now, cum: w.cum})
	if !late {
		return
	}
	if len(w.pauses) == maxPauses {
		w.pauses = append(w.pauses[:0], w.pauses[1:]...)
	}
	w.pauses = append(w.pauses, p)
}

// record adds a pause (tests).
func record(p Pause) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pauses = append(w.pauses, p)
}

// known is the record, with the pause still under way (or just over, the
// heartbeat not yet run since) when the heartbeat is overdue: after a stop
// the process's other goroutines may run before the heartbeat does. Under
// w.mu.
func known() []Pause {
	if w.since.IsZero() {
		return nil
	}
	if p, late := gap(w.last, time.Now()); late {
		return append(w.pauses[:len(w.pauses):len(w.pauses)], p)
	}
	return w.pauses
}

// Over sums up the pauses that overlapped [t0, t1], a pause the heartbeat
// has not yet recorded included.
func Over(t0, t1 time.Time) Span {
	w.mu.Lock()
	defer w.mu.Unlock()
	var s Span
	// Newest first: the record is in time order, and callers ask about
	// the recent past.
	ps := known()
	for i := len(ps) - 1; i >= 0; i-- {
		p := ps[i]
		if p.To.Before(t0) {
			break
		}
		if p.From.After(t1) {
			continue
		}
		s.Count++
		s.Total += p.Len
		if p.Len > s.Longest.Len {
			s.Longest = p
		}
	}
	s.Lag = lagOver(t0, t1)
	return s
}

// lagOver is the heartbeat's lateness in (t0, t1], the wake-up still
// overdue included. Under w.mu.
func lagOver(t0, t1 time.Time) time.Duration {
	if w.since.IsZero() {
		return 0
	}
	at := func(t time.Time) time.Duration {
		i := sort.Search(len(w.lag), func(i int) bool { return w.lag[i].at.After(t) })
		if i == 0 {
			return 0
		}
		return w.lag[i-1].cum
	}
	lag := at(t1) - at(t0)
	if end := time.Now(); t1.After(w.last) {
		if t1.Before(end) {
			end = t1
		}
		lag += max(end.Sub(w.last)-Tick, 0)
	}
	return max(lag, 0)
}

// Since sums up the pauses from t0 until now.
func Since(t0 time.Time) Span { return Over(t0, time.Now()) }

// Scheduled is how much of [t0, t1] the kit was scheduled: the interval
// less the pauses inside it. A wait that must give the target a span of
// the kit's own attention (watch for a redelivery for an ack wait) counts
// this, not the clock.
func Scheduled(t0, t1 time.Time) time.Duration {
	d := t1.Sub(t0)
	w.mu.Lock()
	defer w.mu.Unlock()
	ps := known()
	for i := len(ps) - 1; i >= 0; i-- {
		p := ps[i]
		if p.To.Before(t0) {
			break
		}
		from, to := p.From, p.To
		if from.Before(t0) {
			from = t0
		}
		if to.After(t1) {
			to = t1
		}
		if to.After(from) {
			d -= to.Sub(from)
		}
	}
	return max(d, 0)
}

// Watching says whether the heartbeat runs (someone holds it).
func Watching() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.since.IsZero()
}

// WithTimeout is context.WithTimeout counted on the kit's scheduled time:
// its deadline moves later by every pause of the kit's inside it, at most
// by d again, so a rule paused by its host (SIGSTOP, a stalled VM) keeps
// the time it was given. Deadline reports the deadline as it stands now.
// The caller holds the heartbeat (Hold) for the context's life; without
// it no pause is seen and this is context.WithTimeout.
func WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	c := &scheduledCtx{Context: ctx, start: time.Now(), d: d}
	go func() {
		for {
			t := time.NewTimer(time.Until(c.due()))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			if now := time.Now(); !now.Before(c.due()) {
				cancel(context.DeadlineExceeded)
				return
			}
		}
	}()
	return c, func() { cancel(context.Canceled) }
}

type scheduledCtx struct {
	context.Context
	start time.Time
	d     time.Duration
}

// due is the deadline as it stands: start + d + the pauses since start,
// the pauses counted up to d.
func (c *scheduledCtx) due() time.Time {
	now := time.Now()
	paused := now.Sub(c.start) - Scheduled(c.start, now)
	return c.start.Add(c.d + min(max(paused, 0), c.d))
}

func (c *scheduledCtx) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.due()) {
		return d, true
	}
	return c.due(), true
}

// Err is context.DeadlineExceeded once the scheduled deadline passed, as
// context.WithTimeout's would be.
func (c *scheduledCtx) Err() error {
	if err := c.Context.Err(); err != nil {
		if cause := context.Cause(c.Context); errors.Is(cause, context.DeadlineExceeded) {
			return context.DeadlineExceeded
		}
		return err
	}
	return nil
}
