package eventstore

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/eskit"
	"github.com/onceproof/tck/internal/history"
	"github.com/onceproof/tck/internal/poll"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/stall"
	"github.com/onceproof/tck/internal/verdict"
)

// Races are stochastic: each rule runs barrier-started trials until a
// violation shows or it has the contended trials its power target needs
// (see power.go). At its cap (wall time or trials) short of the target it
// is unknown, never pass. A fail carries the failing trial's history, which
// is the smallest one the kit has.

// attempt is one racing append, what it returned, and when it ran (offsets
// from the round's start).
type attempt struct {
	stream     es.Stream
	err        error
	start, end time.Duration
}

// indeterminate: the append failed with an error that is not a typed
// conflict, so it may or may not have taken effect.
func (a attempt) indeterminate() bool { return a.err != nil && outcomeOf(a.err) == history.Info }

// round is one trial: its writers, what they were told, and its own
// timeline. It is kept so that a trial raced during a fault can be judged
// once the store answers again.
type round struct {
	n        int
	setup    []es.Stream
	at       []attempt
	rec      *history.Recorder // the round's other calls (setup, loads)
	writers  []history.Op      // the racing calls, recorded after the race
	started  time.Time
	tolerant bool    // raced from a fault on: indeterminate appends are allowed
	racers   *racers // the rule's writers (nil: a goroutine per writer)
}

// timeline is the round's operations in order of start.
func (rd *round) timeline() []history.Op {
	all := append(rd.rec.Ops(), rd.writers...)
	sort.SliceStable(all, func(i, j int) bool { return all[i].Start < all[j].Start })
	for i := range all {
		all[i].Index = i
	}
	return all
}

func (rd *round) indeterminate() int {
	n := 0
	for _, a := range rd.at {
		if a.indeterminate() {
			n++
		}
	}
	return n
}

// loader loads an aggregate's whole history for a judge, on the round's
// timeline.
type loader func(agg es.AggregateID) ([]es.Stream, error)

// trial is one race rule's workload: race sets the trial up and releases
// its writers (an error is a failed setup append); judge returns a
// violation ("" for none), or the error of a load it could not do.
type trial struct {
	race  func(ctx context.Context, f *fixture, rd *round) error
	judge func(rd *round, load loader) (string, error)
}

// raceOutcome is the result of a series of trials.
type raceOutcome struct {
	Trials    int
	Contended int // trials in which at least two calls overlapped
	Target    int // contended trials the power target needs
	Violation string
	History   []history.Op
	Elapsed   time.Duration

	shown   *round // the trial in History
	fault   faultOutcome
	stalled stalledTrials
}

// reached: the rule has the contended trials its power target needs.
func (o raceOutcome) reached() bool { return o.Contended >= o.Target }

// runTrials runs tr until a violation, the power target or the cap.
func runTrials(ctx context.Context, f *fixture, cfg RaceConfig, tr trial) raceOutcome {
	return runRace(ctx, f, cfg, tr, nil)
}

// runRace is runTrials with a fault (d may be nil: no fault). The fault
// starts after the first trials; trials go on while it lasts without
// spending the cap; a fault run does not end on its target before the
// fault has returned; rounds that could not be judged during the fault are
// judged once it has returned.
func runRace(ctx context.Context, f *fixture, cfg RaceConfig, tr trial, d *disruption) (out raceOutcome) {
	defer d.wait() // also when a judge panics: the fault's goroutine ends with the rule
	defer stall.Hold()()
	out.Target = contendedFor(cfg.Power)
	var pool *racers
	if useRacers {
		pool = newRacers(cfg.Writers + 1)
		defer pool.stop()
	}
	start := time.Now()
	var deferred []*round
	for ctx.Err() == nil {
		d.startIfDue(ctx, out.Trials, time.Since(start), cfg)
		active := d.active()
		if !active {
			if out.reached() && (d == nil || d.begun()) {
				break
			}
			if out.Trials-out.fault.trials >= cfg.MaxTrials || stall.Scheduled(start, time.Now())-d.lasted() >= cfg.Cap {
				break
			}
		}
		out.Trials++
		if active {
			out.fault.trials++
		}
		// The writer count cycles around cfg.Writers: a run that settles
		// into one scheduling pattern where a race never shows at one
		// count is shaken out of it by the next.
		rd := &round{n: max(2, cfg.Writers-1+out.Trials%3), rec: history.New(), started: time.Now(), tolerant: d.begun(), racers: pool}
		v, pending := play(ctx, f, tr, rd)
		if out.stalled.excuses(rd, v) {
			v = ""
		}
		out.shown = rd
		if contended(rd.at, rd.tolerant) {
			out.Contended++
		}
		if v != "" {
			out.Violation = v
			break
		}
		if rd.tolerant {
			out.fault.indeterminate += rd.indeterminate()
			if rd.at == nil {
				out.fault.lost++
			}
		}
		if pending {
			deferred = append(deferred, rd)
		}
		if active && (pending || rd.at == nil || rd.indeterminate() == len(rd.at)) {
			// The store is not answering: pace the trials so the race
			// goes on through the fault instead of spinning on errors.
			select {
			case <-ctx.Done():
			case <-time.After(faultPause):
			}
		}
	}
	out.Elapsed = time.Since(start)
	out.fault.err = d.wait()
	out.fault.duration = d.lasted()
	out.fault.deferred = len(deferred)
	for _, rd := range deferred {
		if out.Violation != "" || out.fault.undecided != "" {
			break
		}
		out.fault.audited++
		v, err := tr.judge(rd, f.patientLoader(ctx, rd.rec))
		switch {
		case err != nil:
			out.fault.undecided = fmt.Sprintf("the store did not answer a load within %s after the fault: %v", healWait, err)
		case v != "":
			out.Violation = v
			out.shown = rd
		}
	}
	if out.shown != nil {
		out.History = out.shown.timeline()
	}
	if d != nil {
		out.fault.faulted = true
		var at time.Time
		if out.shown != nil {
			at = out.shown.started
		}
		out.History = d.timeline(out.History, at)
	}
	return out
}

// play races one round and judges it. pending: it raced during a fault and
// a load to judge it failed; it is judged after the fault.
func play(ctx context.Context, f *fixture, tr trial, rd *round) (violation string, pending bool) {
	if rd.tolerant {
		// A call into a faulted store may hang until its connection
		// times out; the round gives up on it sooner.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, faultCallTimeout)
		defer cancel()
	}
	if err := tr.race(ctx, f, rd); err != nil {
		if rd.tolerant && outcomeOf(err) == history.Info {
			rd.at = nil // lost to the fault: nothing was raced
			return "", false
		}
		return setupFailed + err.Error(), false
	}
	v, err := tr.judge(rd, f.loader(ctx, rd.rec))
	if err != nil {
		if rd.tolerant {
			return "", true
		}
		return loadFailed + err.Error(), false
	}
	return v, false
}

// How play says the kit's own call failed.
const (
	setupFailed = "setup append failed: "
	loadFailed  = "loading after the race failed: "
)

// loader loads once.
func (f *fixture) loader(ctx context.Context, rec *history.Recorder) loader {
	return func(agg es.AggregateID) ([]es.Stream, error) {
		h := rec.Invoke("checker", "load", agg.ID)
		got, err := f.store.Load(ctx, agg, es.InitialVersion, eskit.MaxVersion)
		if err != nil {
			h.Info(err.Error())
			return nil, err
		}
		h.OK(fmt.Sprintf("%d streams: %v", len(got), summaries(got)))
		return got, nil
	}
}

// patientLoader retries a load for up to healWait: after a fault the store
// may still be coming back.
func (f *fixture) patientLoader(ctx context.Context, rec *history.Recorder) loader {
	once := f.loader(ctx, rec)
	return func(agg es.AggregateID) ([]es.Stream, error) {
		var (
			got  []es.Stream
			last error
		)
		// Not the rule's Gomega: a store that does not come back makes the
		// rule unknown (the caller says so), not fail.
		hctx, cancel := context.WithTimeout(ctx, healWait)
		defer cancel()
		last = poll.Until(hctx, healPoll, healPoll, func() error {
			got, last = once(agg)
			return last
		})
		return got, last
	}
}

// Fault pacing and patience.
const (
	faultPause       = 20 * time.Millisecond // between trials the store did not answer
	faultCallTimeout = 5 * time.Second       // one round's calls, from the fault on
	healWait         = 30 * time.Second      // for the store to answer loads after the fault
	healPoll         = 200 * time.Millisecond
)

// raceAppends releases all streams at once (one goroutine each, writer i
// through stores[i mod len]) and returns
// every attempt, each with the start and end of its call. A panicking store
// is recorded as an indeterminate operation. The calls go on the round's
// timeline after the race: recording them as they start would take the
// recorder's lock between the gate and the call and queue the writers.
//
// spinsBeforeYield: a waiter busy-spins this long (about a microsecond)
// before yielding its processor. Pure spinning starves writers that have not
// reached the gate yet; pure yielding lets one processor run the writers one
// after another. Measured on two cores, this mix makes a tight in-process
// check-then-write show in a few percent of trials, against well under one
// percent for either extreme.
var spinsBeforeYield = 1000

// The barrier is a spin on an atomic flag rather than a channel close: a
// closed channel wakes goroutines one by one over microseconds, long enough
// for an in-process check-then-write to finish before its rival starts. The
// last goroutine to arrive opens the gate, and the waiters yield while they
// spin so that every writer reaches the gate even on two cores.
func raceAppends(ctx context.Context, stores []es.EventStore, rd *round, streams []es.Stream) []attempt {
	out := make([]attempt, len(streams))
	base := rd.started
	var arrived atomic.Int32
	var open atomic.Bool
	n := int32(len(streams))
	job := func(i int) {
		s := streams[i]
		if arrived.Add(1) == n {
			open.Store(true)
		}
		for spins := 0; !open.Load(); spins++ {
			if spins == spinsBeforeYield {
				runtime.Gosched()
				spins = 0
			}
		}
		begin := time.Since(base)
		defer func() {
			if p := recover(); p != nil {
				out[i] = attempt{s, fmt.Errorf("panic in Append: %v", p), begin, time.Since(base)}
			}
		}()
		// Writers spread over the rule's handles, as over service instances.
		err := stores[i%len(stores)].Append(ctx, s)
		out[i] = attempt{s, err, begin, time.Since(base)}
	}
	if rd.racers != nil {
		rd.racers.run(len(streams), job)
	} else {
		var done sync.WaitGroup
		for i := range streams {
			done.Add(1)
			go func() {
				defer done.Done()
				job(i)
			}()
		}
		done.Wait()
	}
	for i, a := range out {
		outcome, result := classify(a.err)
		rd.writers = append(rd.writers, history.Op{Start: a.start, End: a.end, Actor: fmt.Sprintf("w%d", i),
			Action: "append", Value: describe(a.stream), Outcome: outcome, Result: result})
	}
	return out
}

// tally checks "reported successes equal streams stored" for one aggregate:
// every ok attempt is stored (same command id), nothing else is, and no
// version is stored twice. In a tolerant round an indeterminate attempt may
// be stored or not.
func tally(rd *round, got, setup []es.Stream, attempts []attempt) string {
	want, maybe := map[string]bool{}, map[string]bool{}
	for _, s := range setup {
		want[s.CommandID] = true
	}
	oks := 0
	for _, a := range attempts {
		// Every refusal in full: the typed conflict names what was asked.
		if conflictName(a.err) != "error" {
			if what := conflictFields(a.err, a.stream); what != "" {
				return fmt.Sprintf("%s refused with %s, but %s", describe(a.stream), conflictName(a.err), what)
			}
		}
		switch {
		case a.err == nil:
			oks++
			want[a.stream.CommandID] = true
		case rd.tolerant && a.indeterminate():
			maybe[a.stream.CommandID] = true
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
		if !want[c] && !maybe[c] {
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

// The trials of each race rule. They are plain values so the detection rate
// can be measured outside a suite run (see races_test.go). A trial keeps
// everything its judge needs in the round: a round raced during a fault may
// be judged after later rounds have run.
//
// A tolerant round (from a fault on) allows appends that failed with an
// error other than a typed conflict and judges what is stored; a round
// where every writer got a definite answer is judged in full either way.

// oneWinner judges a race for one slot: exactly one writer wins, the others
// get the typed conflict kind.
func oneWinner(rd *round, kind, what string) string {
	ok, typed, other := count(rd.at, kind)
	ident := map[string]string{"VersionConflict": "es.VersionConflictError", "DuplicateAggregateID": "es.DuplicateAggregateIDError"}[kind]
	others := ""
	if other > 0 {
		others = ": " + otherErrors(rd.at, kind)
	}
	if indet := rd.indeterminate(); rd.tolerant && indet > 0 {
		if ok > 1 || other > indet {
			return fmt.Sprintf("%d %s around a fault: want at most 1 success and the rest %s or indeterminate; got %d succeeded, %d %s, %d indeterminate, %d other errors%s",
				rd.n, what, ident, ok, typed, ident, indet, other-indet, others)
		}
		return ""
	}
	if ok != 1 || typed != rd.n-1 {
		return fmt.Sprintf("%d %s: want 1 success and %d %s; got %d succeeded, %d %s, %d other errors%s", rd.n, what, rd.n-1, ident, ok, typed, ident, other, others)
	}
	return ""
}

// setupV1 stores version 1 of a fresh aggregate.
func setupV1(ctx context.Context, f *fixture, rd *round) (es.AggregateID, error) {
	agg := f.aggregate("race")
	v1 := stream(agg, 1, "req-base")
	if err := f.store.Append(ctx, v1); err != nil {
		return agg, err
	}
	rd.setup = []es.Stream{v1}
	return agg, nil
}

func versionRace() trial {
	return trial{
		race: func(ctx context.Context, f *fixture, rd *round) error {
			agg, err := setupV1(ctx, f, rd)
			if err != nil {
				return err
			}
			var ss []es.Stream
			for i := 0; i < rd.n; i++ {
				ss = append(ss, stream(agg, 2, fmt.Sprintf("req-w%d", i)))
			}
			rd.at = raceAppends(ctx, f.handles(), rd, ss)
			return nil
		},
		judge: func(rd *round, load loader) (string, error) {
			if v := oneWinner(rd, "VersionConflict", "writers at version 2"); v != "" {
				return v, nil
			}
			got, err := load(rd.setup[0].Aggregate)
			if err != nil {
				return "", err
			}
			return tally(rd, got, rd.setup, rd.at), nil
		},
	}
}

func createRace() trial {
	return trial{
		race: func(ctx context.Context, f *fixture, rd *round) error {
			agg := f.aggregate("race")
			var ss []es.Stream
			for i := 0; i < rd.n; i++ {
				ss = append(ss, stream(agg, 1, fmt.Sprintf("req-w%d", i)))
			}
			rd.at = raceAppends(ctx, f.handles(), rd, ss)
			return nil
		},
		judge: func(rd *round, load loader) (string, error) {
			if v := oneWinner(rd, "DuplicateAggregateID", "concurrent creates"); v != "" {
				return v, nil
			}
			got, err := load(rd.at[0].stream.Aggregate)
			if err != nil {
				return "", err
			}
			return tally(rd, got, nil, rd.at), nil
		},
	}
}

// requestRace: writer i appends at version 2+i, all with one request id. A
// store that checks the request id outside its write lets two of them land
// at consecutive versions.
func requestRace() trial {
	return trial{
		race: func(ctx context.Context, f *fixture, rd *round) error {
			agg, err := setupV1(ctx, f, rd)
			if err != nil {
				return err
			}
			var ss []es.Stream
			for i := 0; i < rd.n; i++ {
				ss = append(ss, stream(agg, 2+i, "req-raced"))
			}
			rd.at = raceAppends(ctx, f.handles(), rd, ss)
			return nil
		},
		judge: func(rd *round, load loader) (string, error) {
			for _, a := range rd.at {
				if a.err != nil && !isConflict(a.err) && !rd.tolerant {
					return fmt.Sprintf("a racing append failed with a non-conflict error: %v", a.err), nil
				}
			}
			got, err := load(rd.setup[0].Aggregate)
			if err != nil {
				return "", err
			}
			copies := 0
			for _, s := range got {
				if s.RequestID == "req-raced" {
					copies++
				}
			}
			if copies > 1 {
				return fmt.Sprintf("request id req-raced stored %d times (at different versions)", copies), nil
			}
			return tally(rd, got, rd.setup, rd.at), nil
		},
	}
}

func crossAggregateRace() trial {
	return trial{
		race: func(ctx context.Context, f *fixture, rd *round) error {
			var ss []es.Stream
			for i := 0; i < rd.n; i++ {
				ss = append(ss, stream(f.aggregate(fmt.Sprintf("x%d", i)), 1, "req-shared"))
			}
			rd.at = raceAppends(ctx, f.handles(), rd, ss)
			return nil
		},
		judge: func(rd *round, load loader) (string, error) {
			for _, a := range rd.at {
				if a.err != nil && !(rd.tolerant && a.indeterminate()) {
					return fmt.Sprintf("one request id on %d different aggregates: %s refused with %v", rd.n, a.stream.Aggregate.ID, a.err), nil
				}
			}
			for _, a := range rd.at {
				got, err := load(a.stream.Aggregate)
				if err != nil {
					return "", err
				}
				if v := tally(rd, got, nil, []attempt{a}); v != "" {
					return v, nil
				}
			}
			return "", nil
		},
	}
}

// mixedRace races creates, next-version appends and a shared request id on
// one aggregate and checks only the accounting: successes equal streams stored.
func mixedRace() trial {
	return trial{
		race: func(ctx context.Context, f *fixture, rd *round) error {
			agg := f.aggregate("race")
			var ss []es.Stream
			// Roles cycle so that any n >= 3 has a create, two writers sharing
			// one request id at versions 1 and 2, and (n >= 4) a plain append.
			for i := 0; i < rd.n; i++ {
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
			rd.at = raceAppends(ctx, f.handles(), rd, ss)
			return nil
		},
		judge: func(rd *round, load loader) (string, error) {
			got, err := load(rd.at[0].stream.Aggregate)
			if err != nil {
				return "", err
			}
			return tally(rd, got, nil, rd.at), nil
		},
	}
}

// loadRace appends to n different aggregates of one type at once, three
// versions each, and requires no conflict at all. It stops after the first
// version at which an append failed: the next version of that aggregate
// would conflict for a reason of the kit's making.
func loadRace() trial {
	return trial{
		race: func(ctx context.Context, f *fixture, rd *round) error {
			aggs := make([]es.AggregateID, rd.n)
			for i := range aggs {
				aggs[i] = f.aggregate(fmt.Sprintf("p%d", i))
			}
			for v := 1; v <= 3; v++ {
				var ss []es.Stream
				for i, agg := range aggs {
					ss = append(ss, stream(agg, v, fmt.Sprintf("req-%d-%d", i, v)))
				}
				at := raceAppends(ctx, f.handles(), rd, ss)
				rd.at = append(rd.at, at...)
				for _, a := range at {
					if a.err != nil {
						return nil
					}
				}
			}
			return nil
		},
		judge: func(rd *round, _ loader) (string, error) {
			for _, a := range rd.at {
				if a.err != nil && !(rd.tolerant && a.indeterminate()) {
					return fmt.Sprintf("parallel append to %s at version %d refused: %v", a.stream.Aggregate.ID, a.stream.Version, a.err), nil
				}
			}
			return "", nil
		},
	}
}

func registerRaces(s *spec.Set, t target) {
	cfg := t.Race
	// The check-then-write races get the full power target: a tight
	// in-process check-then-write shows in a few percent of contended
	// trials. The cross-aggregate and load races look for false conflicts,
	// which a broken store raises in every trial, and get a target five
	// times weaker (90 contended trials at the default).
	rules := []struct {
		id       string
		tr       trial
		weakened float64
	}{
		{"ES-2.1", versionRace(), 1},
		{"ES-2.2", createRace(), 1},
		{"ES-2.3", requestRace(), 1},
		{"ES-2.4", crossAggregateRace(), 5},
		{"ES-2.5", mixedRace(), 1},
		{"ES-2.6", loadRace(), 5},
	}
	for _, rule := range rules {
		// A race: its power counts contended trials within a wall-time cap,
		// so it needs the processors to itself.
		s.ItRace(rule.id, func(r *spec.R) {
			f := open(r, t)
			cfg := cfg
			cfg.Power = min(0.5, cfg.Power*rule.weakened)
			out := runRace(r.Context(), f, cfg, rule.tr, newDisruption(t.Disrupt, r))
			if out.Violation != "" {
				out.History = markViolation(out.History, out.Violation)
			}
			report(r.Ev, cfg, out)
			r.Ev.Record(out.History)
			r.Expect(out.Violation == "").To(gomega.BeTrue(), "%s (trial %d)", out.Violation, out.Trials)
			if out.fault.err != nil {
				r.Unknown("the fault could not be applied: %v", out.fault.err)
			}
			if out.fault.undecided != "" {
				r.Unknown("%s", out.fault.undecided)
			}
			// Reaching the cap is the store's pace, not a defect: short of
			// the power target the rule decides on the trials it reached,
			// and states the power they have, down to its floor.
			floor := raceFloor(cfg.Power)
			if !out.reached() && out.Contended < floor {
				r.Unknown("reached %d contended trials in the %s cap (%d run), fewer than the floor of %d, with which a violation in %s of contended trials would be caught with 99%% probability: "+
					"the calls rarely overlapped or the store is slow; raise RaceConfig.Cap or Target.Timeout",
					out.Contended, cfg.Cap, out.Trials, floor, percent(powerOf(floor)))
			}
			if !out.reached() {
				r.Ev.Notef("the cap (%s) came at %d of the %d contended trials the power target needs (a violation in %s); the rule decided on the %d it reached (floor %d)",
					cfg.Cap, out.Contended, out.Target, percent(cfg.Power), out.Contended, floor)
			}
			during := ""
			if t.Disrupt != nil {
				during = fmt.Sprintf(", %d of them during a fault of %s", out.fault.trials, out.fault.duration.Round(time.Millisecond))
			}
			cut := ""
			if !out.reached() {
				cut = fmt.Sprintf(" (the cap of %s came before the %d aimed at)", cfg.Cap, out.Target)
			}
			r.Ev.Notef("no violation in %d contended trials%s (%d run%s, %s writers, %s): a violation in %s of contended trials would have been caught with 99%% probability",
				out.Contended, cut, out.Trials, during, cfg.writerRange(), out.Elapsed.Round(time.Millisecond), percent(powerOf(out.Contended)))
		})
	}
}

// raceFloor is the fewest contended trials on which a race rule that
// reached its cap decides: those that rule out, with 99% probability, a
// violation five times as frequent as its power target (90 for the
// check-then-write races at the default 1%: a violation in 5% of contended
// trials; 17 for the false-conflict races, which a broken store raises in
// every trial: 25%). The check-then-write mutants show in 3-15% of
// contended trials (docs/eventstore.md, "Races"); a store at 2-5 ms an
// append reaches some hundreds of contended trials in the cap.
func raceFloor(power float64) int { return contendedFor(min(0.5, 5*power)) }

func report(ev *verdict.Evidence, cfg RaceConfig, out raceOutcome) {
	ev.Figure("trials run", out.Trials, "")
	ev.Figure("contended trials", out.Contended, "")
	ev.Figure("contended trials needed", out.Target, "")
	ev.Figure("contended trials floor (fewer at the cap: unknown)", raceFloor(cfg.Power), "")
	ev.Figure("writers per trial", cfg.writerRange(), "")
	ev.Figure("time spent", out.Elapsed.Milliseconds(), "ms")
	ev.Figure("time cap", cfg.Cap.Milliseconds(), "ms")
	ev.Figure("power target (violation rate per contended trial, 99%)", percent(cfg.Power), "")
	ev.Figure("power reached (violation rate per contended trial, 99%)", percent(powerOf(out.Contended)), "")
	if out.Violation != "" {
		ev.Figure("violations seen", 1, "")
		ev.Smallest(out.History)
	} else {
		ev.Figure("violations seen", 0, "")
	}
	out.fault.figures(ev)
	out.stalled.figures(ev)
}

var (
	writerActor = regexp.MustCompile(`^w[0-9]+$`)
	versionReq  = regexp.MustCompile(`v([0-9]+) req=("[^"]*"|\S+)`)
)

// markViolation labels the operations of a failed trial that make its
// violation, for the report's timeline: the racing appends that succeeded
// ("won", with the version and request id each stored), or, when the
// violation is a call refused that should have succeeded, the refused
// ones; and the read-back that showed it.
func markViolation(ops []history.Op, violation string) []history.Op {
	out := append([]history.Op(nil), ops...)
	refused := strings.Contains(violation, "refused") || strings.Contains(violation, "failed with")
	lastLoad := -1
	for i, op := range out {
		if !writerActor.MatchString(op.Actor) {
			if op.Action == "load" {
				lastLoad = i
			}
			continue
		}
		what := ""
		switch {
		case refused && op.Outcome == history.Fail:
			what = "refused"
		case !refused && op.Outcome == history.OK:
			what = "won"
		default:
			continue
		}
		if m := versionReq.FindStringSubmatch(op.Value); m != nil {
			what += fmt.Sprintf(": v%s req=%s", m[1], strings.Trim(m[2], `"`))
		}
		out[i].Mark = what
	}
	if lastLoad >= 0 {
		out[lastLoad].Mark = "read back: the violation"
	}
	return out
}
