package eventstore

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
)

// disruptAfter is how many trials run on the healthy store before the
// fault starts (or a quarter of the cap or of the trial cap, if sooner):
// enough to show the race works before the fault, little enough to leave
// most of the budget for the fault and after it.
const disruptAfter = 10

// disruption is one call of Target.Disrupt during one race rule. Its
// methods are safe on a nil *disruption, which is a run without a fault.
type disruption struct {
	fn   func(ctx context.Context, rule string, log verdict.Log) error
	rule string
	ev   *verdict.Evidence
	// rec holds the fault's steps on the rule's clock; the rule's
	// timeline merges them with the trial it shows.
	rec   *history.Recorder
	start time.Time // rec's start

	mu           sync.Mutex
	began, ended time.Time
	done         chan struct{}
	err          error
}

// faultOutcome is what a race rule's figures say about its fault.
type faultOutcome struct {
	faulted       bool
	err           error         // Disrupt's: the fault could not be applied
	undecided     string        // a round raced during the fault could not be judged
	duration      time.Duration // how long Disrupt ran
	trials        int           // trials started while it ran
	lost          int           // trials whose setup append failed (nothing raced)
	indeterminate int           // appends from the fault on that failed without a typed conflict
	audited       int           // rounds judged after it returned
	deferred      int           // rounds left to judge until it returned
}

func newDisruption(fn func(context.Context, string, verdict.Log) error, r *spec.R) *disruption {
	if fn == nil {
		return nil
	}
	return &disruption{fn: fn, rule: r.ID, ev: r.Ev, rec: history.New(), start: time.Now(), done: make(chan struct{})}
}

// startIfDue starts the fault once, after the first trials.
func (d *disruption) startIfDue(ctx context.Context, trials int, elapsed time.Duration, cfg RaceConfig) {
	if d == nil || trials == 0 || d.begun() {
		return
	}
	if trials < disruptAfter && elapsed < cfg.Cap/4 && trials < cfg.MaxTrials/4 {
		return
	}
	d.mu.Lock()
	d.began = time.Now()
	d.mu.Unlock()
	go func() {
		defer close(d.done)
		err := d.call(ctx)
		d.mu.Lock()
		d.ended, d.err = time.Now(), err
		d.mu.Unlock()
	}()
}

// call runs Disrupt; a panic in it is a fault that could not be applied.
func (d *disruption) call(ctx context.Context) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the disruption panicked: %v", p)
		}
	}()
	return d.fn(ctx, d.rule, ruleLog{d.rec, d.ev})
}

// begun: the fault has started (it may have ended).
func (d *disruption) begun() bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.began.IsZero()
}

// active: the fault has started and Disrupt has not returned.
func (d *disruption) active() bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.began.IsZero() && d.ended.IsZero()
}

// lasted is how long Disrupt has run so far.
func (d *disruption) lasted() time.Duration {
	if d == nil {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.began.IsZero():
		return 0
	case d.ended.IsZero():
		return time.Since(d.began)
	}
	return d.ended.Sub(d.began)
}

// wait waits for Disrupt to return, if it was started, and returns its error.
func (d *disruption) wait() error {
	if d == nil || !d.begun() {
		return nil
	}
	<-d.done
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// timeline merges the fault's steps with a trial's operations, the trial
// shifted onto the rule's clock, in order of start.
func (d *disruption) timeline(trial []history.Op, trialStart time.Time) []history.Op {
	shift := trialStart.Sub(d.start)
	all := d.rec.Ops()
	for _, op := range trial {
		op.Start += shift
		if op.Outcome != "" {
			op.End += shift
		}
		all = append(all, op)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Start < all[j].Start })
	for i := range all {
		all[i].Index = i
	}
	return all
}

// ruleLog is the verdict.Log a fault writes to: steps on the rule's timeline,
// figures and notes in its evidence.
type ruleLog struct {
	rec *history.Recorder
	ev  *verdict.Evidence
}

func (l ruleLog) Step(actor, action, key string, err error) {
	h := l.rec.Invoke(actor, action, key)
	if err != nil {
		h.Fail(err.Error())
		return
	}
	h.OK("")
}

func (l ruleLog) Note(actor, action, key, result string) { l.rec.Note(actor, action, key, result) }

func (l ruleLog) Figure(name string, value any, unit string) { l.ev.Figure(name, value, unit) }

func (l ruleLog) Notef(format string, args ...any) { l.ev.Notef(format, args...) }

// figures adds the fault's figures to a race rule's evidence.
func (o faultOutcome) figures(ev *verdict.Evidence) {
	if !o.faulted {
		return
	}
	ev.Figure("fault duration", o.duration.Milliseconds(), "ms")
	ev.Figure("trials during the fault", o.trials, "")
	ev.Figure("trials lost to the fault (setup append failed)", o.lost, "")
	ev.Figure("indeterminate appends from the fault on", o.indeterminate, "")
	ev.Figure("trials deferred until the store answered again", o.deferred, "")
	ev.Figure("trials judged after the fault", o.audited, "")
}
