package eventstore

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/gomega"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
)

// Races are stochastic: each rule runs barrier-started trials until a
// violation shows, the trial cap is reached, or the time budget is spent. A
// pass says how many trials found nothing; a fail carries the failing trial's
// history, which is the smallest one the kit has.

// attempt is one racing append and what it returned.
type attempt struct {
	stream es.Stream
	err    error
}

// trial runs one barrier-started race on a fresh recorder and returns a
// violation ("" for none).
type trial func(ctx context.Context, f *fixture, rec *history.Recorder, n int) string

// RaceOutcome is the result of a series of trials; exported through the
// test-only hook so the detection rate of the race rules can be measured.
type RaceOutcome struct {
	Trials    int
	Violation string
	History   []history.Op
	Elapsed   time.Duration
}

// runTrials runs tr until a violation, cfg.MaxTrials or cfg.Budget.
func runTrials(ctx context.Context, f *fixture, cfg RaceConfig, tr trial) RaceOutcome {
	start := time.Now()
	var out RaceOutcome
	for out.Trials < cfg.MaxTrials && time.Since(start) < cfg.Budget && ctx.Err() == nil {
		out.Trials++
		rec := history.New()
		// The writer count cycles around cfg.Writers: a run that settles
		// into one scheduling pattern where a race never shows at one
		// count is shaken out of it by the next.
		n := cfg.Writers - 1 + out.Trials%3
		if v := tr(ctx, f, rec, n); v != "" {
			out.Violation, out.History = v, rec.Ops()
			break
		}
		out.History = rec.Ops()
	}
	out.Elapsed = time.Since(start)
	return out
}

// raceAppends releases all streams at once (one goroutine each) and returns
// every attempt. A panicking store is recorded as an indeterminate operation.
//
// spinsBeforeYield: a waiter busy-spins this long (about a microsecond)
// before yielding its processor. Pure spinning starves writers that have not
// reached the gate yet; pure yielding lets one processor run the writers one
// after another. Measured on two cores, this mix makes a tight in-process
// check-then-write show in a few percent of trials, against well under one
// percent for either extreme.
const spinsBeforeYield = 1000

// The barrier is a spin on an atomic flag rather than a channel close: a
// closed channel wakes goroutines one by one over microseconds, long enough
// for an in-process check-then-write to finish before its rival starts. The
// last goroutine to arrive opens the gate, and the waiters yield while they
// spin so that every writer reaches the gate even on two cores.
func raceAppends(ctx context.Context, store es.EventStore, rec *history.Recorder, streams []es.Stream) []attempt {
	out := make([]attempt, len(streams))
	var done sync.WaitGroup
	var arrived atomic.Int32
	var open atomic.Bool
	n := int32(len(streams))
	for i, s := range streams {
		done.Add(1)
		go func() {
			defer done.Done()
			actor := fmt.Sprintf("w%d", i)
			if arrived.Add(1) == n {
				open.Store(true)
			}
			for spins := 0; !open.Load(); spins++ {
				if spins == spinsBeforeYield {
					runtime.Gosched()
					spins = 0
				}
			}
			h := rec.Invoke(actor, "append", describe(s))
			defer func() {
				if p := recover(); p != nil {
					out[i] = attempt{s, fmt.Errorf("panic in Append: %v", p)}
					h.Info(out[i].err.Error())
				}
			}()
			err := store.Append(ctx, s)
			out[i] = attempt{s, err}
			h.Complete(classify(err))
		}()
	}
	done.Wait()
	return out
}

// tally checks "reported successes equal streams stored" for one aggregate:
// every ok attempt is stored (same command id), nothing else is, and no
// version is stored twice.
func tally(f *fixture, rec *history.Recorder, agg es.AggregateID, setup []es.Stream, attempts []attempt) string {
	h := rec.Invoke("checker", "load", agg.ID)
	got, err := f.store.Load(f.ctx, agg, es.InitialVersion, es.MaxVersion)
	if err != nil {
		h.Info(err.Error())
		return "loading after the race failed: " + err.Error()
	}
	h.OK(fmt.Sprintf("%d streams: %v", len(got), summaries(got)))
	want := map[string]bool{}
	for _, s := range setup {
		want[s.CommandID] = true
	}
	oks := 0
	for _, a := range attempts {
		if a.err == nil {
			oks++
			want[a.stream.CommandID] = true
		}
	}
	stored := map[string]bool{}
	versions := map[int]int{}
	for _, s := range got {
		stored[s.CommandID] = true
		versions[s.Version]++
	}
	for v, n := range versions {
		if n > 1 {
			return fmt.Sprintf("version %d stored %d times", v, n)
		}
	}
	for c := range want {
		if !stored[c] {
			return fmt.Sprintf("phantom success: %s was reported stored but is not in the history (%d successes, %d streams stored)", c, oks+len(setup), len(got))
		}
	}
	for c := range stored {
		if !want[c] {
			return fmt.Sprintf("a stream reported as failed was stored: %s (%d successes, %d streams stored)", c, oks+len(setup), len(got))
		}
	}
	return ""
}

func count(attempts []attempt, kind string) (ok, typed, other int) {
	for _, a := range attempts {
		switch {
		case a.err == nil:
			ok++
		case conflictName(a.err) == kind:
			typed++
		default:
			other++
		}
	}
	return
}

func firstErrors(attempts []attempt) string {
	var s []string
	for _, a := range attempts {
		if a.err != nil && conflictName(a.err) == "error" {
			s = append(s, a.err.Error())
		}
	}
	sort.Strings(s)
	if len(s) > 3 {
		s = s[:3]
	}
	return fmt.Sprint(s)
}

// The trials of each race rule. They are plain functions so the detection
// rate can be measured outside Ginkgo (see races_test.go).

func versionRace() trial {
	return func(ctx context.Context, f *fixture, rec *history.Recorder, n int) string {
		agg := f.aggregate("race")
		v1 := stream(agg, 1, "req-base")
		if err := f.store.Append(ctx, v1); err != nil {
			return "setup append failed: " + err.Error()
		}
		var ss []es.Stream
		for i := 0; i < n; i++ {
			ss = append(ss, stream(agg, 2, fmt.Sprintf("req-w%d", i)))
		}
		at := raceAppends(ctx, f.store, rec, ss)
		ok, typed, other := count(at, "VersionConflict")
		if ok != 1 || typed != n-1 {
			return fmt.Sprintf("%d writers at version 2: %d succeeded, %d version conflicts, %d other errors %s (want 1, %d, 0)", n, ok, typed, other, firstErrors(at), n-1)
		}
		return tally(f, rec, agg, []es.Stream{v1}, at)
	}
}

func createRace() trial {
	return func(ctx context.Context, f *fixture, rec *history.Recorder, n int) string {
		agg := f.aggregate("race")
		var ss []es.Stream
		for i := 0; i < n; i++ {
			ss = append(ss, stream(agg, 1, fmt.Sprintf("req-w%d", i)))
		}
		at := raceAppends(ctx, f.store, rec, ss)
		ok, typed, other := count(at, "DuplicateAggregateID")
		if ok != 1 || typed != n-1 {
			return fmt.Sprintf("%d concurrent creates: %d succeeded, %d creation conflicts, %d other errors %s (want 1, %d, 0)", n, ok, typed, other, firstErrors(at), n-1)
		}
		return tally(f, rec, agg, nil, at)
	}
}

// requestRace: writer i appends at version 2+i, all with one request id. A
// store that checks the request id outside its write lets two of them land
// at consecutive versions.
func requestRace() trial {
	return func(ctx context.Context, f *fixture, rec *history.Recorder, n int) string {
		agg := f.aggregate("race")
		v1 := stream(agg, 1, "req-base")
		if err := f.store.Append(ctx, v1); err != nil {
			return "setup append failed: " + err.Error()
		}
		var ss []es.Stream
		for i := 0; i < n; i++ {
			ss = append(ss, stream(agg, 2+i, "req-raced"))
		}
		at := raceAppends(ctx, f.store, rec, ss)
		for _, a := range at {
			if a.err != nil && !isConflict(a.err) {
				return fmt.Sprintf("a racing append failed with a non-conflict error: %v", a.err)
			}
		}
		h := rec.Invoke("checker", "load", agg.ID)
		got, err := f.store.Load(ctx, agg, es.InitialVersion, es.MaxVersion)
		if err != nil {
			h.Info(err.Error())
			return "loading after the race failed: " + err.Error()
		}
		h.OK(fmt.Sprint(summaries(got)))
		copies := 0
		for _, s := range got {
			if s.RequestID == "req-raced" {
				copies++
			}
		}
		if copies > 1 {
			return fmt.Sprintf("request id req-raced stored %d times (at different versions)", copies)
		}
		return tally(f, rec, agg, []es.Stream{v1}, at)
	}
}

func crossAggregateRace() trial {
	return func(ctx context.Context, f *fixture, rec *history.Recorder, n int) string {
		var ss []es.Stream
		for i := 0; i < n; i++ {
			ss = append(ss, stream(f.aggregate(fmt.Sprintf("x%d", i)), 1, "req-shared"))
		}
		at := raceAppends(ctx, f.store, rec, ss)
		for _, a := range at {
			if a.err != nil {
				return fmt.Sprintf("one request id on %d different aggregates: %s refused with %v", n, a.stream.Aggregate.ID, a.err)
			}
		}
		for _, a := range at {
			if v := tally(f, rec, a.stream.Aggregate, nil, []attempt{a}); v != "" {
				return v
			}
		}
		return ""
	}
}

// mixedRace races creates, next-version appends and a shared request id on
// one aggregate and checks only the accounting: successes equal streams stored.
func mixedRace() trial {
	return func(ctx context.Context, f *fixture, rec *history.Recorder, n int) string {
		agg := f.aggregate("race")
		var ss []es.Stream
		// Roles cycle so that any n >= 3 has a create, two writers sharing
		// one request id at versions 1 and 2, and (n >= 4) a plain append.
		for i := 0; i < n; i++ {
			switch i % 4 {
			case 0:
				ss = append(ss, stream(agg, 1, fmt.Sprintf("req-c%d", i), "A", "B"))
			case 1:
				ss = append(ss, stream(agg, 1, "req-shared"))
			case 2:
				ss = append(ss, stream(agg, 2, "req-shared", "A", "B", "C"))
			default:
				ss = append(ss, stream(agg, 2, fmt.Sprintf("req-n%d", i), "A", "B", "C"))
			}
		}
		at := raceAppends(ctx, f.store, rec, ss)
		return tally(f, rec, agg, nil, at)
	}
}

// loadRace appends to n different aggregates of one type at once, three
// versions each, and requires no conflict at all.
func loadRace() trial {
	return func(ctx context.Context, f *fixture, rec *history.Recorder, n int) string {
		aggs := make([]es.AggregateID, n)
		for i := range aggs {
			aggs[i] = f.aggregate(fmt.Sprintf("p%d", i))
		}
		for v := 1; v <= 3; v++ {
			var ss []es.Stream
			for i, agg := range aggs {
				ss = append(ss, stream(agg, v, fmt.Sprintf("req-%d-%d", i, v)))
			}
			for _, a := range raceAppends(ctx, f.store, rec, ss) {
				if a.err != nil {
					return fmt.Sprintf("parallel append to %s at version %d refused: %v", a.stream.Aggregate.ID, a.stream.Version, a.err)
				}
			}
		}
		return ""
	}
}

func registerRaces(s *spec.Set, t Target) {
	cfg := t.Race
	n := cfg.Writers
	// The check-then-write races get the whole budget: a tight in-process
	// check-then-write shows in a fraction of a percent of trials. The
	// cross-aggregate and load races look for false conflicts, which a
	// broken store raises at once, and get a quarter of it.
	rules := []struct {
		id    string
		tr    trial
		share float64
	}{
		{"ES-2.1", versionRace(), 1},
		{"ES-2.2", createRace(), 1},
		{"ES-2.3", requestRace(), 1},
		{"ES-2.4", crossAggregateRace(), 0.25},
		{"ES-2.5", mixedRace(), 1},
		{"ES-2.6", loadRace(), 0.25},
	}
	for _, r := range rules {
		s.It(r.id, func(ctx context.Context, ev *verdict.Evidence) {
			f := open(ctx, t, r.id, ev)
			cfg := cfg
			cfg.Budget = time.Duration(float64(cfg.Budget) * r.share)
			out := runTrials(ctx, f, cfg, r.tr)
			report(ev, cfg, out)
			ev.Record(out.History)
			Expect(out.Violation).To(BeEmpty(), "%s (trial %d)", out.Violation, out.Trials)
			if out.Trials == 0 {
				spec.Unknown("no trial ran within the budget of %s", cfg.Budget)
			}
			ev.Notef("no violation in %d trials of %d writers (%s)", out.Trials, n, out.Elapsed.Round(time.Millisecond))
		})
	}
}

func report(ev *verdict.Evidence, cfg RaceConfig, out RaceOutcome) {
	ev.Figure("trials run", out.Trials, "")
	ev.Figure("writers per trial", cfg.Writers, "")
	ev.Figure("time spent", out.Elapsed.Milliseconds(), "ms")
	ev.Figure("time budget", cfg.Budget.Milliseconds(), "ms")
	if out.Violation != "" {
		ev.Figure("violations seen", 1, "")
		ev.Smallest(out.History)
	} else {
		ev.Figure("violations seen", 0, "")
	}
}
