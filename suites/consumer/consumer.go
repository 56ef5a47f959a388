// Package consumer is the consumer conformance suite: the CO rules of the
// catalog. The consumer under test (package co) handles events delivered by
// a real broker and writes its side effects through sinks the kit provides
// and observes; the kit redelivers, edits, replays stale versions, hands one
// event to two workers at once, loses acks, and ends instances at points it
// controls, then compares every sink with a model computed from the schedule
// alone.
//
// A backend author plugs a consumer in with one call from a plain Go test,
// in the style of testing/fstest.TestFS (see examples/consumer):
//
//	consumer.Check(t, consumer.Target{New: myconsumer.New, Declared: ...})
//
// or, inside a Ginkgo suite, with consumer.Register(target) before RunSpecs.
// Without a Target.Broker each rule runs over an embedded NATS JetStream
// server of its own; a consumer service (Target.Service) always does.
package consumer

import (
	"github.com/onceproof/tck/internal/kithooks"
	"slices"
	"testing"
	"time"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/spec"
)

// Check runs every CO rule against target as a subtest of t named by its id,
// so `go test -run 'TestMyConsumer/CO-1.1'` runs one rule. A fail or unknown
// verdict fails the subtest with its reason; not-applicable and skipped
// verdicts skip it with theirs. Check touches no Ginkgo state.
//
// With the environment variable TCK_REPORT_DIR set (or the ReportTo
// option) it also writes the report bundle `tck run` writes (results.json,
// report.md, report.html, junit.xml, histories) into that folder; every
// Check and Register of one test binary goes into the one report there.
func Check(t *testing.T, target Target, opts ...Option) {
	t.Helper()
	spec.Entry[Target](newSet).Check(t, target, opts...)
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

// Register registers every CO rule against target as Ginkgo specs, each
// labelled with its id, "consumer" and its level. Call it inside a Ginkgo
// suite before RunSpecs, once per target.
//
// In process (no Service) the rules' bodies run at the same time, from the
// first spec on, each in a world of its own, and each spec reports its
// rule's outcome: a BeforeEach or AfterEach of yours runs around that
// spec, not around the body. A Service's rules run one at a time unless
// Service.Concurrent says more.
//
// TCK_REPORT_DIR (or ReportTo) writes the report bundle as Check does,
// after each rule, the target named by the containers around the call.
func Register(target Target, opts ...Option) {
	spec.Entry[Target](newSet).Register(target, opts...)
}

// newSet is the one place both entry points get their rules from.
func newSet(t Target, o spec.Option) *spec.Set {
	t.hooks = spec.HooksOf[kithooks.Consumer](o)
	t = t.withDefaults()
	var caps []catalog.Capability
	if has(t.Declared.Scopes, co.ScopeIndex) && has(t.Declared.Scopes, co.ScopeNotify) {
		caps = append(caps, catalog.CapTwoScopes)
	}
	if t.Outbox != nil {
		caps = append(caps, catalog.CapOutbox)
	}
	caps = append(caps, brokerCaps(t)...)
	s := spec.New("consumer", caps...)
	s.Reasons = reasons(t)
	// In process every rule has its own world (consumer, sinks, broker
	// streams); a service's replicas are processes of the author's, which
	// may share a port or a database, so its rules run one at a time
	// unless it says otherwise (Service.Concurrent).
	s.Concurrent = t.Service == nil || t.Service.Concurrent > 1
	if t.Service != nil && t.Service.Concurrent > 1 {
		s.MaxConcurrent = t.Service.Concurrent
	}
	if t.Timeout > 0 {
		s.Timeout = t.Timeout
	} else if t.Service != nil {
		s.Timeout = 180 * time.Second // a process per replica, restarts, redeliveries after a real ack wait
	}
	if t.Pace > 0 {
		// A declared pace extends CO-5.2's deadline by the time its distinct
		// events and replays take at that pace.
		s.SetUp = map[string]time.Duration{"CO-5.2": time.Duration(capacityDistinct(t)+replayOldest+replaySampled) * t.Pace}
	}
	registerScopes(s, t)
	registerCrashes(s, t)
	registerHorizon(s, t)
	registerOutbox(s, t)
	registerSchedule(s, t)
	registerCapacity(s, t)
	registerAckFailures(s, t)
	registerFlakyCalls(s, t)
	return s
}

func has(xs []string, x string) bool { return slices.Contains(xs, x) }
