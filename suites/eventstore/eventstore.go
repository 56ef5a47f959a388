// Package eventstore is the event-store conformance suite: the ES rules of the
// catalog as Ginkgo specs. A backend author plugs a store in with one call,
//
//	eventstore.Register(eventstore.Target{Open: func(ctx context.Context) (es.EventStore, error) { ... }})
//
// from a Ginkgo suite in their own _test.go (see examples/eventstore), and the
// tck CLI does the same in-process for the adapters it ships.
//
// Every rule opens its own handle through the factory and works on aggregates
// whose ids are unique to the rule and trial, so a shared database needs no
// cleaning between rules.
package eventstore

import (
	"context"
	"runtime"
	"time"

	"github.com/onsi/ginkgo/v2"

	"github.com/onceproof/tck/es"
	"github.com/onceproof/tck/internal/catalog"
	"github.com/onceproof/tck/internal/spec"
)

// Factory opens a handle on the store under test. Handles opened by one
// factory must see the same data.
type Factory func(ctx context.Context) (es.EventStore, error)

// Target is what Register needs.
type Target struct {
	Open Factory
	// Caps is what the store declares about itself.
	Caps es.Capabilities
	// Race tunes the ES-2 race rules; zero values take the defaults.
	Race RaceConfig
	// Timeout bounds each rule (default spec.DefaultTimeout).
	Timeout time.Duration
}

// RaceConfig sizes the barrier-started race trials.
type RaceConfig struct {
	Writers   int           // goroutines released together per trial (default: two per processor, at least 4)
	MaxTrials int           // stop after this many trials without a violation (default 20000)
	Budget    time.Duration // or after this long (default 1s; a quarter of it for ES-2.4 and ES-2.6)
}

func (c RaceConfig) withDefaults() RaceConfig {
	if c.Writers < 2 {
		// Two rivals per processor: measured on two cores, 4 writers catch
		// a tight check-then-write far sooner than 2 (too few rivals in
		// flight) or 8 (the writers queue behind each other).
		c.Writers = min(max(4, 2*runtime.GOMAXPROCS(0)), 16)
	}
	if c.MaxTrials <= 0 {
		c.MaxTrials = 20000
	}
	if c.Budget <= 0 {
		c.Budget = time.Second
	}
	return c
}

// Register registers every ES rule against t. Call it inside a Ginkgo suite
// (before RunSpecs), once per target.
func Register(t Target) {
	t.Race = t.Race.withDefaults()
	var caps []catalog.Capability
	if t.Caps.PreCheck != nil {
		caps = append(caps, catalog.CapPreCheck)
	}
	s := spec.New("eventstore", caps...)
	if t.Timeout > 0 {
		s.Timeout = t.Timeout
	}
	ginkgo.Describe("event store", func() {
		registerBasics(s, t)
		registerRaces(s, t)
		registerPreCheck(s, t)
	})
}
