// Package eventstore is the event-store conformance suite: the ES rules of the
// catalog, run against a store a backend author plugs in. From a plain
// `go test`, in the style of testing/fstest.TestFS:
//
//	func TestMyStore(t *testing.T) {
//		eventstore.Check(t, eventstore.Target{Open: func(ctx context.Context) (es.EventStore, error) { ... }})
//	}
//
// runs every rule as a subtest named by its id (`go test -run 'TestMyStore/ES-1.5'`
// runs one). An author who keeps a Ginkgo suite calls Register before
// RunSpecs instead. See examples/eventstore; the tck CLI runs the adapters
// it ships through the same rules, with the kit's own hooks (a fault during
// the races, the horizon of tck run --max-wait) given as an option only the
// kit can make.
//
// Every rule opens its own handle through the factory and works on aggregates
// whose ids are unique to the rule and trial, so a shared database needs no
// cleaning between rules.
package eventstore

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/spec"
)

// Factory opens a handle on the store under test. Handles opened by one
// factory must see the same data.
type Factory func(ctx context.Context) (es.EventStore, error)

// Target is the store under test and what it declares.
type Target struct {
	// Open opens a handle on the store; each rule opens its own.
	Open Factory
	// Caps is what the store declares about itself.
	Caps es.Capabilities
	// Race tunes the ES-2 race rules; zero values take the defaults.
	Race RaceConfig
	// Seed seeds every generated value and schedule (the adversarial ids
	// of every rule, the ES-4 histories). 0 picks one per rule; either way
	// the seed is the figure "seed" in the rule's evidence, and setting it
	// (tck run --seed) replays the same values and schedule.
	Seed int64
	// OneHandle, when set, says why the factory cannot open a second
	// handle on the same data; the rules then use one handle and the
	// multi-instance rules say so in their evidence.
	OneHandle string
	// Timeout bounds each rule (default 60 s). It is the budget of the
	// rules whose work is volume, sized to the store's pace as they go: a
	// longer one lets a slow store reach more (the race cap is half of it,
	// ES-4.1's bursts and ES-4.3's fills get their share, ES-1.17's and
	// ES-1.18's fills 75% of it instead of 5 s: ES-1.17 skipped at a
	// store's pace names the Timeout that runs it).
	Timeout time.Duration
}

// RaceConfig sizes the barrier-started race trials of the ES-2 rules.
//
// A trial is contended when at least two of its calls overlapped in time; a
// rule runs until it has the contended trials its power target needs (or a
// violation shows), and is unknown if it reaches a cap first.
type RaceConfig struct {
	// Writers released together per trial; trials cycle through
	// Writers-1, Writers and Writers+1 (default 4).
	Writers int
	// Power is the violation rate per contended trial that a pass rules
	// out with 99% probability (default 0.01, which takes 459 contended
	// trials). Smaller is stronger and slower.
	Power float64
	// Cap is the limit in wall time per rule, time the kit itself was not
	// scheduled left out (default 30s, or half of a Target.Timeout longer
	// than 60s; a fault run's cap is extended by the fault's duration). A
	// rule that reaches it short of its power target decides on the
	// contended trials it reached and states their power; below its floor
	// (the trials that catch a violation five times as frequent as Power)
	// it is unknown.
	Cap time.Duration
	// MaxTrials is the hard limit in trials per rule (default 1,000,000).
	MaxTrials int
}

func (c RaceConfig) withDefaults() RaceConfig {
	if c.Writers < 2 {
		// Two rivals per processor: measured on two cores, 4 writers catch
		// a tight check-then-write far sooner than 2 (too few rivals in
		// flight) or 8 (the writers queue behind each other).
		c.Writers = min(max(defaultWriters, 2*runtime.GOMAXPROCS(0)), 16)
	}
	if c.Power <= 0 || c.Power >= 1 {
		c.Power = defaultPower
	}
	if c.Cap <= 0 {
		c.Cap = 30 * time.Second
	}
	if c.MaxTrials <= 0 {
		c.MaxTrials = 1_000_000
	}
	return c
}

// writerRange is the writer counts the trials cycle through.
func (c RaceConfig) writerRange() string {
	return fmt.Sprintf("%d-%d", max(2, c.Writers-1), c.Writers+1)
}

// The defaults, chosen by measurement on two cores (docs/eventstore.md,
// "Races"); scripts/race-power.sh measures them again.
var (
	defaultWriters = 4
	defaultPower   = 0.01
)

// Option tunes Check and Register.
type Option = spec.Option

// ReportTo writes the report bundle of Check or Register into dir, as the
// environment variable TCK_REPORT_DIR does without a code change. The
// folder must be new, empty or one the kit wrote before (it is cleared
// first); every Check and Register of one test binary adds to one report
// in it.
func ReportTo(dir string) Option { return spec.ReportTo(dir) }

// UnknownIsSkip makes Check and Register report an undecided rule as a
// skip instead of a failure. The verdict stays unknown in a report; without
// this option an undecided rule fails the author's test.
func UnknownIsSkip() Option { return spec.UnknownIsSkip() }

// Check runs every ES rule against target as a subtest of t named by its id.
// A fail or unknown verdict fails the subtest with its reason;
// not-applicable skips it. It touches no Ginkgo state, so it can live beside
// a Ginkgo suite in the same package.
//
// With the environment variable TCK_REPORT_DIR set (or the ReportTo
// option) it also writes the report bundle `tck run` writes (results.json,
// report.md, report.html, junit.xml, histories) into that folder; every
// Check and Register of one test binary goes into the one report there.
func Check(t *testing.T, target Target, opts ...Option) {
	t.Helper()
	spec.Entry[Target](newSet).Check(t, target, opts...)
}

// Register registers every ES rule against target as a Ginkgo spec labelled
// with its id, suite and level. Call it inside a Ginkgo suite (at the top
// level or in a container, before RunSpecs), once per target.
//
// The rules' bodies run at the same time (the few that need the target or
// the processors to themselves alone), from the first spec on, and each
// spec reports its rule's outcome: a BeforeEach or AfterEach of yours runs
// around that spec, not around the body, so a target's data is shared by
// rules that run at once (each uses ids of its own).
//
// TCK_REPORT_DIR (or ReportTo) writes the report bundle as Check does,
// after each rule, the target named by the containers around the call.
func Register(target Target, opts ...Option) {
	spec.Entry[Target](newSet).Register(target, opts...)
}

// target is the author's Target with the kit's hooks (none for an author).
type target struct {
	Target
	kithooks.EventStore
}

// newSet is the one place both entry points get their rules from; the kit's
// hooks come with the options (spec.With).
func newSet(author Target, o spec.Option) *spec.Set {
	t := target{author, spec.HooksOf[kithooks.EventStore](o)}
	if t.Race.Cap <= 0 && t.Timeout > spec.DefaultTimeout {
		// A longer Timeout is the author's budget for a slow store: the
		// races get half of it, as they get 30 s of the default 60.
		t.Race.Cap = t.Timeout / 2
	}
	t.Race = t.Race.withDefaults()
	var caps []catalog.Capability
	if t.Caps.PreCheck != nil {
		caps = append(caps, catalog.CapPreCheck)
	}
	s := spec.New("eventstore", caps...)
	// Every rule opens its own handle and works on aggregates of its own,
	// so under Ginkgo the rules run at the same time (the races alone,
	// ItRace); not on
	// a store with one handle, nor under a fault that stops the store.
	s.Concurrent = t.OneHandle == "" && t.Disrupt == nil
	s.Before = t.Before
	if t.Timeout > 0 {
		s.Timeout = t.Timeout
	}
	if need := t.MaxWait*100/versionsShare + 5*time.Second; need > s.Timeout {
		// ES-1.17's fill takes the MaxWait the author gave it (tck run
		// --max-wait): its deadline, and no other rule's, grows to hold it.
		s.SetUp = map[string]time.Duration{"ES-1.17": need - s.Timeout}
	}
	registerBasics(s, t)
	registerRaces(s, t)
	registerPreCheck(s, t)
	registerGenerated(s, t)
	registerReach(s, t)
	return s
}
