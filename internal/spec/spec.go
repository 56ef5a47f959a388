// Package spec is the one path by which a suite registers a rule. It looks
// the rule up in the catalog (an id that is not there is a programming
// error), decides not-applicable from the target's capabilities, gives the
// rule a deadline, and hands the body an R: its context, its evidence, and a
// Gomega bound to this rule. A rule registers with Set.It, or, when it must
// wait (a window, an ack wait), with Set.Background: a workload started
// in the background before the rules run, so the waits overlap, and the judge it hands
// back, run in the rule's spec.
//
// A Set of rules is then run by one of two drivers, the same rules either way:
//
//   - Ginkgo (Set.Ginkgo): one ginkgo.It per rule, named "ID title" and
//     labelled with the id, the suite and the level, so a label filter
//     selects rules. This is what a suite's Register and the CLI use.
//   - go test (Set.Test): one subtest per rule, named by its id, in the style
//     of testing/fstest.TestFS. This is what a suite's Check uses; it touches
//     no Ginkgo state, so it lives beside any Ginkgo suite of the author's.
//
// A body reaches its verdict the same way under both: returning is pass, a
// Gomega failure is fail, a panic is fail with the panic in the evidence, the
// deadline is unknown, and R.Unknown / R.NotApplicable / R.Skipped end the
// rule with that verdict and a reason.
package spec

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/verdict"
)

// Report entry names the runner reads back.
const (
	EntryEvidence = "onceproof.evidence"
	EntryVerdict  = "onceproof.verdict"
	// EntryWall is how long a rule's body ran (the first spec of a
	// Concurrent set runs every body): the
	// rule's duration, not the spec's (which waited for it).
	EntryWall = "onceproof.wall"
)

// DefaultTimeout bounds one rule unless the suite sets another.
const DefaultTimeout = 60 * time.Second

// ShortOfPace is the figure a rule whose work is volume records, saying
// why, when it ends skipped (R.Skipped) because the pace it measured puts
// its aim beyond its budget: the self-test and RequireMustPass take such a
// skip of a slow correct store (eventstore/memory-paced) for what it is,
// not for a defect. Any other skip, and any unknown, stays a problem.
const ShortOfPace = "beyond its budget at the target's pace"

// Grace is how long a body may take to return after its deadline before the
// driver gives up on it.
const Grace = 2 * time.Second

// Override is the verdict a body declared instead of pass or fail.
type Override struct {
	Verdict verdict.Verdict `json:"verdict"`
	Reason  string          `json:"reason"`
	// Missing: the capabilities a not-applicable rule lacked.
	Missing []string `json:"missing,omitempty"`
}

// Body is a rule's check.
type Body func(r *R)

// R is one run of one rule.
type R struct {
	// Gomega is bound to this rule: a failed Expect, Eventually or
	// Consistently ends the rule with verdict fail.
	gomega.Gomega
	// Ev is the rule's evidence.
	Ev *verdict.Evidence
	// ID is the rule's id.
	ID string

	ctx     context.Context
	end     func(v verdict.Verdict, reason string)
	cleanup func(fn func())
	excuses []func(failure string) string

	soft    int      // depth of Check calls
	failed  []string // the explained failures of the checks that failed
	anyFail bool     // an assertion failed (inside Check or not)
	prog    *progress
}

// failedCheckNote starts the note that keeps a failed assertion's whole
// message and its place in the kit.
const failedCheckNote = "a failed check at"

// softFailure is what a failed assertion inside Check panics with; Check
// recovers it and the rule goes on.
type softFailure struct{}

// Check runs one check of the rule: when an assertion inside fn fails, the
// failure is recorded and the body goes on with its next check, so one run
// lists every check of the rule that failed (a closed handle's Append, Load
// and RequestIDExists), not only the first. The rule fails once the body
// returns. Each assertion's description says what was done and what the
// contract expects (the es/mq/co identifier); the reason adds what came
// back.
func (r *R) Check(fn func()) {
	r.soft++
	defer func() {
		r.soft--
		if p := recover(); p != nil {
			if _, ok := p.(softFailure); !ok {
				panic(p)
			}
		}
	}()
	fn()
}

// fail records a failed assertion: the whole message and where it failed go
// to the notes (for the kit's developers), the reason gets its explanation.
// Inside Check it panics softFailure; otherwise it returns the rule's
// reason, every earlier failed check included.
func (r *R) fail(message, where string) string {
	r.failing(message)
	r.anyFail = true
	r.Ev.Notef("%s %s:\n%s", failedCheckNote, where, strings.TrimSpace(message))
	why := explain(message)
	if r.soft > 0 {
		r.failed = append(r.failed, why)
		panic(softFailure{})
	}
	return combine(append(r.failed, why))
}

// Failed reports whether an assertion of the rule has failed so far; a
// clean-up keeps the evidence only a failure needs (whole ids) with it.
func (r *R) Failed() bool { return r.anyFail }

// checksFailed is the rule's reason when checks failed and the body still
// returned, or "".
func (r *R) checksFailed() string {
	if len(r.failed) == 0 {
		return ""
	}
	return combine(r.failed)
}

// combine is one reason for several failed checks, each numbered.
func combine(fs []string) string {
	if len(fs) == 1 {
		return fs[0]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d checks failed:", len(fs))
	for i, f := range fs {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " (%d) %s", i+1, f)
	}
	return b.String()
}

// Excuse registers fn, asked before a failed assertion fails the rule with
// the failure's headline (its first line that says what failed): a
// non-empty answer ends the rule unknown with that reason instead, and the
// whole failure goes to the notes. It is for doubt about the kit's own
// measurement (its process was paused while it timed the target), never
// about the target's behaviour.
func (r *R) Excuse(fn func(failure string) string) { r.excuses = append(r.excuses, fn) }

// failing is called with a failed assertion's message before the driver
// fails the rule; an excuse ends the rule unknown there.
func (r *R) failing(message string) {
	for _, fn := range r.excuses {
		if why := fn(headline(message)); why != "" {
			r.Ev.Notef("a failure the kit did not count: %s", message)
			r.end(verdict.Unknown, why)
		}
	}
}

// headline is the first line of a failure that says what failed: a failed
// Eventually's or Consistently's own first line says only when.
func headline(message string) string {
	lines := strings.Split(strings.TrimSpace(message), "\n")
	if h := lines[0]; len(lines) > 1 && strings.HasSuffix(h, "s.") && (strings.HasPrefix(h, "Timed out after ") || strings.HasPrefix(h, "Failed after ")) {
		lines = lines[1:]
	}
	return strings.TrimSpace(lines[0])
}

// Context is cancelled at the rule's deadline.
func (r *R) Context() context.Context { return r.ctx }

// DeferCleanup runs fn after the body, however it ends (last in, first out).
func (r *R) DeferCleanup(fn func()) { r.cleanup(fn) }

// Unknown ends the rule with verdict unknown: the kit could not decide.
func (r *R) Unknown(format string, args ...any) {
	r.end(verdict.Unknown, fmt.Sprintf(format, args...))
}

// NotApplicable ends the rule with verdict not-applicable; the reason must
// name the missing capability.
func (r *R) NotApplicable(format string, args ...any) {
	r.end(verdict.NotApplicable, fmt.Sprintf(format, args...))
}

// Skipped ends the rule as skipped, e.g. when a declared window is longer
// than the run's time budget. The reason says why.
func (r *R) Skipped(format string, args ...any) {
	r.end(verdict.Skipped, fmt.Sprintf(format, args...))
}

// rule is one registered rule.
type rule struct {
	id    string
	meta  catalog.Rule
	body  Body
	alone bool // runs with no other rule of the set (ItAlone)
	race  bool // holds a share of the processors (ItRace)
}

// Set holds the rules of one suite against one target.
type Set struct {
	suite string
	have  map[catalog.Capability]bool
	rules []rule

	// Timeout bounds each rule.
	Timeout time.Duration
	// SetUp is more time for a rule, by id, on top of Timeout: set-up of
	// the kit's own that the rule cannot do without and that takes what
	// the host gives it (a server of the rule's own started and restarted:
	// an Erlang node boots in seconds on quiet cores, in tens of seconds
	// beside CPU burners). A correct target is no slower for it: only a
	// set-up that never ends runs into the longer bound.
	SetUp map[string]time.Duration
	// Parallel runs the rules at the same time under go test, as parallel
	// subtests: they run after the test function that called Test
	// returned, so only a suite whose targets clean up with t.Cleanup sets
	// it (the broker's). A rule registered with ItAlone is not parallel.
	Parallel bool
	// Concurrent runs the rules at the same time (at most MaxConcurrent
	// bodies), under the engine and under Ginkgo, which runs specs one
	// after another (its first spec runs the set, each spec reports its
	// rule). A rule registered with ItAlone runs by itself all the same,
	// once the others are done. A set that is not Concurrent runs its rules
	// one after another.
	Concurrent bool
	// MaxConcurrent bounds the bodies running at once (default
	// DefaultMaxConcurrent).
	MaxConcurrent int
	// Before, when set, runs at the start of every rule's body, with the
	// rule's R: the kit's wiring of a target hooks its own doubts there
	// (R.Excuse, R.DeferCleanup), per rule whether the rules run one by
	// one or at once.
	Before Body
	// Prepare, when set, is called once, before the first rule runs and
	// after the set started the workloads of its Background rules, with the
	// ids of the rules that will run and apply (Ginkgo: those the label
	// filter selects). Finish is called after the last rule of the set has
	// run, however it ended, before the set stops any workload left
	// running. The broker suite reports progress between the two.
	Prepare func(ids []string)
	Finish  func()
	// Whether a rule applies is decided in one place (notApplicable), when
	// the rule is about to run, from what follows.
	//
	// Probe, when set, finds capabilities on the target itself, once,
	// before the first rule is decided: the optional interfaces its handle
	// implements (a broker's mq.DeadLetterReader), as fstest finds an
	// fs.ReadDirFS. The capabilities New was given are declared ones.
	Probe func(ctx context.Context) []catalog.Capability
	// NotApplicable lists rules the target does not run, whatever its
	// capabilities, each with the reason (a target meant for some rules).
	NotApplicable map[string]string
	// Lacks is the target's own reason for each capability it lacks (Redis
	// Streams, nak-delay: "has no negative acknowledgement"): a rule that
	// needs one is not-applicable with the reasons of every capability it
	// misses, said with their names. The rule's need is the catalog's.
	Lacks map[catalog.Capability]string
	// Reasons are the fallback by rule id for a rule whose missing
	// capabilities have no reason in Lacks.
	Reasons map[string]string

	probeOnce sync.Once

	bg background
}

// New makes a Set for a target that has the given capabilities.
func New(suite string, caps ...catalog.Capability) *Set {
	s := &Set{suite: suite, have: map[catalog.Capability]bool{}, Timeout: DefaultTimeout}
	for _, c := range caps {
		s.have[c] = true
	}
	return s
}

// It registers rule id with body.
func (s *Set) It(id string, body Body) {
	m := catalog.MustLookup(id)
	if m.Suite != s.suite {
		panic(fmt.Sprintf("spec: rule %s belongs to suite %s, not %s", id, m.Suite, s.suite))
	}
	s.rules = append(s.rules, rule{id: id, meta: m, body: body})
}

// ItAlone registers rule id with body, to run with no other rule of the
// set at the same time: a rule that needs the processors to itself (a race
// whose power counts contended trials within a wall-time cap) or changes
// what the other rules share (it restarts the target).
func (s *Set) ItAlone(id string, body Body) {
	s.It(id, body)
	s.rules[len(s.rules)-1].alone = true
}

// ItRace registers rule id with body, for a rule that counts what
// happened at the same time within a wall-time cap (a race's contended
// trials): it runs at once with the others, but holds a share of the
// processors while it runs (one of ProcessorShares), so no more race rules
// run at once, in this set, another set or another target of the run, than
// the machine has processors.
func (s *Set) ItRace(id string, body Body) {
	s.It(id, body)
	s.rules[len(s.rules)-1].race = true
}

// probe runs Probe once; the capabilities it finds join the declared ones.
// Every driver calls it before deciding a rule (a later call waits for the
// first).
func (s *Set) probe(ctx context.Context) {
	s.probeOnce.Do(func() {
		if s.Probe == nil {
			return
		}
		for _, c := range s.Probe(ctx) {
			s.have[c] = true
		}
	})
}

// applies reports whether ru applies to the target (see notApplicable).
func (s *Set) applies(ru rule) bool {
	why, _ := s.notApplicable(ru)
	return why == ""
}

// notApplicable is the one place that decides whether a rule applies: the
// reason it does not and the capabilities it misses, or "".
func (s *Set) notApplicable(ru rule) (why string, missing []string) {
	if why, ok := s.NotApplicable[ru.id]; ok {
		return why, nil
	}
	var whys []string
	for _, c := range ru.meta.Needs {
		if !s.have[c] {
			missing = append(missing, string(c))
			if w, ok := s.Lacks[c]; ok && !slices.Contains(whys, w) {
				whys = append(whys, w)
			}
		}
	}
	if len(missing) == 0 {
		return "", nil
	}
	own := strings.Join(whys, "; ")
	if own == "" {
		own = s.Reasons[ru.id]
	}
	why = "the target does not declare the capability " + strings.Join(missing, ", ")
	if own != "" {
		why = own + " (" + why + ")"
	}
	return why, missing
}

// Labels are the Ginkgo labels of a rule: its id, its suite and its level.
func Labels(m catalog.Rule) []string {
	return []string{m.ID, m.Suite, string(m.Level)}
}

// ended is what a body's run panics with to end it early; the drivers
// recover it. Gomega failures under go test end the same way.
type ended struct {
	v      verdict.Verdict
	reason string
}

// timeoutOf bounds rule id: Timeout and its SetUp allowance.
func (s *Set) timeoutOf(id string) time.Duration { return s.Timeout + s.SetUp[id] }
