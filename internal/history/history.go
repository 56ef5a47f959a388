// Package history records operations as a Jepsen-style timeline: every
// operation is invoked by an actor and completes as ok (it took effect), fail
// (it certainly did not) or info (indeterminate: it may or may not have taken
// effect, e.g. a timeout or a lost reply). Checkers read histories; they never
// drive the system.
package history

import (
	"fmt"
	"sync"
	"time"
)

// Outcome of a completed operation.
type Outcome string

const (
	OK   Outcome = "ok"
	Fail Outcome = "fail"
	Info Outcome = "info"
)

// Op is one operation on the timeline. Offsets are from the recorder's start.
type Op struct {
	Index   int           `json:"index"`
	Start   time.Duration `json:"startNs"`
	End     time.Duration `json:"endNs"`
	Actor   string        `json:"actor"`
	Action  string        `json:"action"`
	Value   string        `json:"value,omitempty"`
	Outcome Outcome       `json:"outcome,omitempty"` // empty while pending
	Result  string        `json:"result,omitempty"`
	// Mark, on a failure's history, labels an operation that makes the
	// violation ("won: v3 req-raced"): the report draws it highlighted.
	Mark string `json:"mark,omitempty"`
}

func (o Op) String() string {
	return fmt.Sprintf("%8.3fms %-10s %-12s %-28s %-4s %s", float64(o.Start)/1e6, o.Actor, o.Action, o.Value, o.Outcome, o.Result)
}

// Recorder is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	start time.Time
	ops   []Op
}

// New starts a recorder; offsets count from now.
func New() *Recorder { return &Recorder{start: time.Now()} }

// Handle completes one invoked operation.
type Handle struct {
	r *Recorder
	i int
}

// Invoke records the start of an operation.
func (r *Recorder) Invoke(actor, action, value string) Handle {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Since(r.start)
	r.ops = append(r.ops, Op{Index: len(r.ops), Start: now, Actor: actor, Action: action, Value: value})
	return Handle{r: r, i: len(r.ops) - 1}
}

// Complete records how the operation ended.
func (h Handle) Complete(outcome Outcome, result string) {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	op := &h.r.ops[h.i]
	op.End = time.Since(h.r.start)
	op.Outcome = outcome
	op.Result = result
}

// OK, Fail and Info are shorthands for Complete.
func (h Handle) OK(result string)   { h.Complete(OK, result) }
func (h Handle) Fail(result string) { h.Complete(Fail, result) }
func (h Handle) Info(result string) { h.Complete(Info, result) }

// Note records an instantaneous event (an observation, a fault, a leader change).
func (r *Recorder) Note(actor, action, value, result string) {
	r.Invoke(actor, action, value).Complete(OK, result)
}

// Ops returns a copy of the timeline.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}
