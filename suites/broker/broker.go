// Package broker is the broker conformance suite: the BR rules of the catalog,
// checked against a real broker through mq.Broker. A broker author plugs one
// in from a plain go test,
//
//	func TestMyBroker(t *testing.T) {
//		broker.Check(t, broker.Target{Open: func(ctx context.Context) (mq.Broker, error) { ... }})
//	}
//
// (one subtest per rule id: `go test -run 'TestMyBroker/BR-2.1'` runs one
// rule), or from inside a Ginkgo suite with broker.Register(target) before
// RunSpecs (rules selected by label filter: `--label-filter BR-2.1`).
//
// Every rule creates its own topics and consumer groups, named after the rule
// and a nonce, and deletes them afterwards, so a shared server needs no
// cleaning and is otherwise untouched.
//
// Most rules must wait (a window to pass, an ack wait to end). The waits are
// independent, so they overlap: under Register the first rule to run starts
// the workload of every rule the label filter selected, each on its own
// topics, and each spec then awaits and judges its own; under Check the rules
// run as parallel subtests, each starting its own workload.
//
// Rules that need what only the kit's own adapters give (a fault proxy, a
// server of the rule's own to restart, a read-only inspector of the server's
// settings, the optional interfaces of package mq) are not-applicable
// here, each naming what it lacks; `tck run` runs them on the kit's targets.
package broker

import (
	"context"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/mq"
)

// Factory opens a handle on the broker under test. Handles opened by one
// factory see the same topics.
type Factory func(ctx context.Context) (mq.Broker, error)

// Target is the broker under test.
type Target struct {
	// Open opens a handle on the broker; each rule opens its own.
	Open Factory
	// Caps is what the broker declares (normally Open(...).Capabilities()).
	Caps mq.Capabilities
	// Budget is the run's time budget: a rule whose declared window does not
	// fit in it is skipped with that reason, never shortened (default 60s).
	Budget time.Duration
	// Timeout bounds each rule (default: Budget plus a margin).
	Timeout time.Duration
	// Seed seeds the random choices of the randomized rules (BR-2.9: which
	// deliveries are nak'd and where members crash). 0 picks one. Either way
	// the seed is the figure "seed" in those rules' evidence, and a run with
	// the same seed makes the same random choices.
	Seed int64
	// Lacks gives, for a capability the broker does not have, the broker's
	// own reason, keyed by the capability's name as the catalog spells it
	// (docs/RULES.md, "needs"): every rule needing it is not-applicable with
	// that reason.
	Lacks map[string]string
	// NotApplicable lists rules this target cannot run for a reason other
	// than a capability (a target that runs some rules only), each with the
	// reason; they are reported not-applicable with it and start no
	// workload.
	NotApplicable map[string]string
	// Progress, when set, receives a line now and then while rules wait
	// longer than a few seconds: which rules are waiting and about how
	// long is left.
	Progress func(line string)
}

// Check runs every BR rule against target as a subtest of t named by its id,
// so `go test -run 'TestMyBroker/BR-2.1'` runs one rule. A fail or unknown
// verdict fails the subtest with its reason; not-applicable and skipped
// verdicts skip it with theirs. The subtests run in parallel, each starting
// its own workload, so the rules' waits overlap. Check touches no Ginkgo
// state.
//
// With the environment variable TCK_REPORT_DIR set (or the ReportTo
// option) it also writes the report bundle `tck run` writes (results.json,
// report.md, report.html, junit.xml, histories) into that folder; every
// Check and Register of one test binary goes into the one report there.
func Check(t *testing.T, target Target, opts ...Option) {
	t.Helper()
	spec.Entry[Target](newSet).Check(t, target, opts...)
}

// Register registers every BR rule against target as Ginkgo specs, one It
// per rule labelled with its id, "broker" and its level. Call it inside a
// Ginkgo suite, before RunSpecs, once per target.
//
// The first rule to run starts the workload of every rule the label filter
// selected, each in its own goroutine on its own topics, so the waits
// overlap; each spec then waits for its own workload and judges it. A rule
// that was filtered out, or needs a capability the target lacks, starts
// nothing. After the last rule, anything still running is stopped.
//
// TCK_REPORT_DIR (or ReportTo) writes the report bundle as Check does,
// after each rule, the target named by the containers around the call.
func Register(target Target, opts ...Option) {
	spec.Entry[Target](newSet).Register(target, opts...)
}

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
