package eventstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceproof/tck/adapters/eventstore/memory"
	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/runner"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/suites/eventstore"
)

// faulty is the reference store with a switchable fault, the in-process
// stand-in for a database being restarted.
type faulty struct {
	es.EventStore
	mode *atomic.Int32
}

const (
	healthy int32 = iota
	down          // every call fails with a transport error, nothing is stored
	ackLost       // appends are stored, then the reply is lost
	liesOK        // appends report success and store nothing (phantom success)
)

var errConnRefused = errors.New("dial tcp 127.0.0.1:5432: connection refused")

func (f faulty) Append(ctx context.Context, s es.Stream) error {
	switch f.mode.Load() {
	case down:
		return errConnRefused
	case ackLost:
		if err := f.EventStore.Append(ctx, s); err != nil {
			return err
		}
		return errors.New("read tcp: connection reset by peer")
	case liesOK:
		if s.Version == 1 && s.RequestID == "req-base" {
			return f.EventStore.Append(ctx, s) // the setup, so the race goes on
		}
		return nil
	}
	return f.EventStore.Append(ctx, s)
}

func (f faulty) Load(ctx context.Context, a es.AggregateID, from, to int) ([]es.Stream, error) {
	if f.mode.Load() == down {
		return nil, errConnRefused
	}
	return f.EventStore.Load(ctx, a, from, to)
}

// fault is a Disrupt that switches the store to mode for a while and
// records what it was asked.
type fault struct {
	mode    *atomic.Int32
	to      int32
	lasts   time.Duration
	err     error
	mu      sync.Mutex
	calls   map[string]int
	running atomic.Int32
}

func (f *fault) disrupt(ctx context.Context, rule string, log verdict.Log) error {
	f.mu.Lock()
	f.calls[rule]++
	f.mu.Unlock()
	f.running.Add(1)
	defer f.running.Add(-1)
	f.mode.Store(f.to)
	log.Step("nemesis", "stop", "db", nil)
	select {
	case <-ctx.Done():
	case <-time.After(f.lasts):
	}
	f.mode.Store(healthy)
	log.Note("nemesis", "start", "db", "accepting connections")
	log.Figure("downtime", f.lasts.Milliseconds(), "ms")
	log.Notef("stopped the database for %s", f.lasts)
	if f.err != nil {
		log.Step("nemesis", "verify", "db", f.err)
	}
	return f.err
}

func runFault(t *testing.T, f *fault, rules ...string) map[string]verdict.Result {
	t.Helper()
	db := memory.NewDB()
	f.mode = &atomic.Int32{}
	f.calls = map[string]int{}
	target := eventstore.Target{
		Open:    func(context.Context) (es.EventStore, error) { return faulty{db.Open(), f.mode}, nil },
		Timeout: 10 * time.Second,
		// The rules stop at their power target, after the fault; a 10%
		// target keeps them decided on a loaded runner (power is not what
		// these tests check).
		Race: eventstore.RaceConfig{Cap: 5 * time.Second, Power: 0.1},
	}
	hooks := spec.With(kithooks.EventStore{Disrupt: f.disrupt})
	got := map[string]verdict.Result{}
	for _, r := range runner.Run("faulty", func() { eventstore.Register(target, hooks) }, runner.Options{Rules: rules}) {
		got[r.Rule] = r
	}
	if n := f.running.Load(); n != 0 {
		t.Errorf("%d disruptions still running after the rules ended", n)
	}
	return got
}

var raceRules = []string{"ES-2.1", "ES-2.2", "ES-2.3", "ES-2.4", "ES-2.5", "ES-2.6"}

func figure(r verdict.Result, name string) (any, bool) {
	for _, f := range r.Evidence.Figures {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// Through a fault that takes the store down and one that loses replies to
// stored appends, a correct store passes every race rule; the fault is
// called once per rule, runs while trials go on, and its steps, figures and
// notes are in the rule's evidence.
func TestDisruptedRaceRulesPassOnACorrectStore(t *testing.T) {
	for _, mode := range []struct {
		name string
		to   int32
	}{{"down", down}, {"ack-lost", ackLost}} {
		t.Run(mode.name, func(t *testing.T) {
			f := &fault{to: mode.to, lasts: 300 * time.Millisecond}
			got := runFault(t, f, raceRules...)
			for _, id := range raceRules {
				r := got[id]
				t.Logf("%s: %s %q", id, r.Verdict, r.Reason)
				if r.Verdict != verdict.Pass {
					t.Errorf("%s: %s %q", id, r.Verdict, r.Reason)
					continue
				}
				if f.calls[id] != 1 {
					t.Errorf("%s: Disrupt called %d times, want once", id, f.calls[id])
				}
				if v, _ := figure(r, "trials during the fault"); v == nil || v.(int) == 0 {
					t.Errorf("%s: no trial ran during the fault: %+v", id, r.Evidence.Figures)
				}
				if v, _ := figure(r, "downtime"); v == nil {
					t.Errorf("%s: the fault's figure is missing: %+v", id, r.Evidence.Figures)
				}
				var steps []string
				for _, op := range r.Evidence.Timeline {
					if op.Actor == "nemesis" {
						steps = append(steps, op.Action+":"+string(op.Outcome))
					}
				}
				if strings.Join(steps, " ") != "stop:ok start:ok" {
					t.Errorf("%s: the fault's steps on the timeline: %v", id, steps)
				}
				if !strings.Contains(strings.Join(r.Evidence.Notes, "\n"), "stopped the database") || !strings.Contains(r.Reason, "during a fault") {
					t.Errorf("%s: notes %q, reason %q", id, r.Evidence.Notes, r.Reason)
				}
			}
			if mode.to == down {
				// Every round the fault left undecided is judged once the
				// store is back. Whether a round ran into the fault at all
				// (rather than losing its setup) is the scheduler's.
				judged, _ := figure(got["ES-2.1"], "trials judged after the fault")
				deferred, _ := figure(got["ES-2.1"], "trials deferred until the store answered again")
				if judged == nil || deferred == nil || judged.(int) != deferred.(int) {
					t.Errorf("ES-2.1: %v of %v deferred rounds judged after the store came back: %+v", judged, deferred, got["ES-2.1"].Evidence.Figures)
				}
				if deferred != nil && deferred.(int) == 0 {
					t.Logf("ES-2.1: no round ran into the fault this time (every trial during it lost its setup)")
				}
			}
		})
	}
}

// A store that reports success without storing during the fault fails,
// even when the fault also reports an error.
func TestPhantomSuccessDuringAFaultFails(t *testing.T) {
	f := &fault{to: liesOK, lasts: 300 * time.Millisecond, err: errors.New("the database came back late")}
	got := runFault(t, f, "ES-2.1", "ES-2.5")
	for _, id := range []string{"ES-2.1", "ES-2.5"} {
		if r := got[id]; r.Verdict != verdict.Fail {
			t.Errorf("%s: %s %q, want fail", id, r.Verdict, r.Reason)
		}
	}
}

// A fault that could not be applied leaves a race rule undecided.
func TestFaultNotAppliedIsUnknown(t *testing.T) {
	f := &fault{to: healthy, lasts: 50 * time.Millisecond, err: errors.New("pg_ctl: could not send stop signal")}
	got := runFault(t, f, "ES-2.2")
	r := got["ES-2.2"]
	if r.Verdict != verdict.Unknown || !strings.Contains(r.Reason, "could not send stop signal") {
		t.Errorf("ES-2.2: %s %q, want unknown naming the fault's error", r.Verdict, r.Reason)
	}
	var failed bool
	for _, op := range r.Evidence.Timeline {
		failed = failed || (op.Actor == "nemesis" && op.Outcome == "fail" && strings.Contains(op.Result, "stop signal"))
	}
	if !failed {
		t.Errorf("the failed step is not on the timeline: %v", r.Evidence.Timeline)
	}
}
