// Package api is the command and HTTP idempotency suite: the API rules of
// the catalog, checked against a running HTTP service as a black box, in
// whatever language it is written. The service is described by an endpoint
// description (how to create a resource and where its stable id goes, how to
// read it back by that id, the declared contract for a repeated id:
// reject-409 or replay). From a plain `go test`:
//
//	func TestMyService(t *testing.T) {
//		api.Check(t, api.Target{URL: srv.URL, Desc: api.Default(api.Reject409)})
//	}
//
// runs every rule as a subtest named by its id; an author who keeps a
// Ginkgo suite calls Register before RunSpecs instead. See examples/api and
// docs/api.md; the tck CLI registers its targets (the reference, a URL, a
// command it starts) the same way.
//
// Every rule works on ids (and, where a scope is declared, tenants) unique
// to the rule and trial, so a shared service needs no cleaning between rules.
package api

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/onceproof/tck/internal/apidesc"
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/spec"
)

// Description is a service's endpoint description (see docs/api.md).
type Description = apidesc.Description

// Contract is what a service answers to a repeated id.
type Contract = apidesc.Contract

// The two contracts a service may declare.
const (
	Reject409 = apidesc.Reject409
	Replay    = apidesc.Replay
)

// Default is the description the kit's reference service and
// examples/api implement, under contract c.
func Default(c Contract) *Description { return apidesc.Default(c) }

// LoadDescription reads an endpoint description file (YAML or JSON); a
// malformed one is an error naming the file, line and field.
func LoadDescription(file string) (*Description, error) { return apidesc.Load(file) }

// Target is the service under test and what it declares.
type Target struct {
	// URL is the service's base URL, e.g. http://127.0.0.1:8080.
	URL string
	// Desc describes its endpoints and contract.
	Desc *Description
	// Restart, when set, ends the service abruptly and starts it again on
	// the same durable state, returning once it listens (API-1.5). Only a
	// service the kit (or the author's test) started can be restarted;
	// without it API-1.5 is not applicable.
	Restart func(ctx context.Context) error
	// Replicas are the base URLs of further instances of the service over
	// the same durable state (two replicas behind one load balancer); the
	// generated rules spread their requests over URL and these (API-5.1 at
	// random; API-1.6 and API-5.2 rotate every step kind over them, each
	// step named by its replica). Without them those rules run on one
	// instance and say so.
	Replicas []string
	// Seed seeds every rule's values and schedules (0: each rule picks one
	// and records it in its evidence; `tck run --seed` replays it).
	Seed int64
	// Horizon is how long after a creation the kit checks repeats (API-5.2;
	// default 6 s; bounded by the declared retention).
	Horizon time.Duration
	// Race tunes API-2.1; zero values take the defaults.
	Race RaceConfig
	// Timeout bounds each rule (default: 60 s, or the race cap plus 30 s).
	Timeout time.Duration
	// TLS, when set, verifies an https:// service (its CA, a client
	// certificate; tck run --tls-ca): the kit's clients and its fault
	// proxy's way to the service use it. nil: the system's roots.
	TLS *tls.Config
}

// RaceConfig sizes the barrier-started trials of API-2.1.
//
// A trial is contended when at least two of its requests overlapped in
// time; the rule runs until it has the contended trials its power target
// needs (or a violation shows), and is unknown if it reaches a cap first.
type RaceConfig struct {
	// Requests released together per trial, all with one id (default 8,
	// at least 8).
	Requests int
	// Power is the violation rate per contended trial that a pass rules
	// out with 99% probability (default 0.01: 459 contended trials).
	Power float64
	// Cap is the hard limit in wall time, time the kit itself was not
	// scheduled left out (default 40 s).
	Cap time.Duration
	// MaxTrials is the hard limit in trials (default 100,000).
	MaxTrials int
}

func (c RaceConfig) withDefaults() RaceConfig {
	if c.Requests < 8 {
		c.Requests = 8
	}
	if c.Power <= 0 || c.Power >= 1 {
		c.Power = 0.01
	}
	if c.Cap <= 0 {
		c.Cap = 40 * time.Second
	}
	if c.MaxTrials <= 0 {
		c.MaxTrials = 100_000
	}
	return c
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

// Check runs every API rule against target as a subtest of t named by its
// id. A fail or unknown verdict fails the subtest with its reason;
// not-applicable skips it.
//
// With the environment variable TCK_REPORT_DIR set (or the ReportTo
// option) it also writes the report bundle `tck run` writes (results.json,
// report.md, report.html, junit.xml, histories) into that folder; every
// Check and Register of one test binary goes into the one report there.
func Check(t *testing.T, target Target, opts ...Option) {
	t.Helper()
	spec.Entry[Target](newSet).Check(t, target, opts...)
}

// Register registers every API rule against target as a Ginkgo spec
// labelled with its id, suite and level. Call it before RunSpecs.
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

// newSet is the one place both entry points get their rules from.
func newSet(t Target, _ spec.Option) *spec.Set {
	t.Race = t.Race.withDefaults()
	if t.Desc == nil {
		t.Desc = apidesc.Default(apidesc.Reject409)
	}
	var caps []catalog.Capability
	if t.Desc.Scope != nil {
		caps = append(caps, catalog.CapScope)
	}
	if t.Restart != nil {
		caps = append(caps, catalog.CapRestart)
	}
	if ownStore(t) {
		caps = append(caps, catalog.CapOwnStore)
	}
	s := spec.New("api", caps...)
	s.Lacks = map[catalog.Capability]string{catalog.CapOwnStore: noOwnStore}
	// Each rule uses request ids of its own; the rules that restart the
	// service run alone (ItAlone), the one that races at a barrier holds a
	// processor share (ItRace).
	s.Concurrent = true
	// API-5.2 waits its horizon by definition.
	s.Timeout = max(spec.DefaultTimeout, t.Race.Cap+30*time.Second, t.Horizon+30*time.Second)
	if t.Timeout > 0 {
		s.Timeout = t.Timeout
	}
	registerBasics(s, t)
	registerRace(s, t)
	registerLost(s, t)
	registerIdentity(s, t)
	registerGenerated(s, t)
	registerDepFailures(s, t)
	return s
}
