package consumer

import (
	"context"
	"github.com/onceproof/tck/internal/kithooks"
	"time"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/mq"
)

// Target is the consumer under test and the broker it reads from.
type Target struct {
	// Broker opens a handle on the broker deliveries come from; the kit
	// creates (and deletes) its own topics on it, one per rule. nil: each
	// rule starts an embedded NATS JetStream server of its own, given by
	// the option embedded.NATS() of suites/consumer/embedded (without it,
	// every rule is unknown saying so).
	Broker func(ctx context.Context) (mq.Broker, error)
	// BrokerCaps, when set, is what that broker has; the rules that need a
	// mechanism it lacks are not-applicable with the reason (brokers.go).
	// nil: a broker with NATS JetStream's mechanisms.
	BrokerCaps *mq.Capabilities
	// BrokerName names the broker in those reasons ("broker/kafka").
	BrokerName string
	// New builds consumer instances: at start and after every crash.
	New co.Factory
	// Declared is what the consumer says about itself (default: both scopes,
	// records that never expire).
	Declared co.Declared
	// Outbox, when set, is the writer and relay CO-4.1 crashes; without it
	// CO-4.1 is not applicable.
	Outbox co.Outbox
	// Timing scales the contract's minutes and bounds the waits.
	Timing Timing
	// Seed seeds the CO-5.1 schedule. 0 picks one from the time; either way
	// the seed is the figure "seed" in the rule's evidence, and setting it
	// here re-runs the same schedule.
	Seed int64
	// Events is the size of the CO-5.1 schedule (default and minimum 200).
	Events int
	// Distinct is how many distinct events CO-5.2 plans to hand the
	// consumer before it replays the oldest (default 12000 in process, 1000
	// for a Service); the consumer's pace and the rule's deadline may stop
	// it sooner, and the evidence states the reach.
	Distinct int
	// Timeout bounds each rule (default 60 s; 180 s for a Service).
	Timeout time.Duration
	// Pace, when set, is how long the consumer may take per event at most,
	// as its author measured it on a machine like the kit's (its own
	// database, a remote call, a worker that does the effect after the
	// ack). The kit measures the pace as it goes whether or not this is
	// set; a declared pace extends the budgets: CO-5.2's deadline grows to
	// hand its distinct events at that pace, and the quiet period before
	// effects are judged is at least 4 times the pace.
	Pace time.Duration
	// Service, when set, is a consumer service the kit runs as its own
	// process and checks from outside (see Service): the same rules, with
	// Broker, BrokerCaps, New, Outbox and Timing unused.
	Service *Service

	hooks kithooks.Consumer // the embedded broker and a Service's channels (spec.With)
}

// Timing sets the scaled clock and the broker's windows. Durations marked
// "seed" are in the contract's units and run Scale times faster; "real" ones
// are wall-clock bounds.
type Timing struct {
	Scale             float64       // seed time per real time (default 1200: a seed minute is 50 ms)
	AckWait           time.Duration // seed: the broker's ack wait (default 2 min)
	RedeliveryHorizon time.Duration // seed: when CO-3.1 redelivers (default 11 min, the seed's t=11)
	NakDelay          time.Duration // seed: delay of the kit's nak after a Handle error (default 30 s)
	Settle            time.Duration // real: how long a step may take to be acked (default 5 s)
	HandleDeadline    time.Duration // real: a Handle call longer than this is a blocked consumer (default 2 s)
	NotifyLatency     time.Duration // real: how long a notification send takes (default 2 ms)
	// ReadLatency is real: how long the answer of a read (Store.Get,
	// Index.Get, Notifier.Sent) takes to come back, as from a remote store
	// (default 3 ms). The read is made when the call begins, so a
	// read-then-write by two workers interleaves as it would in production.
	ReadLatency time.Duration
}

func (t Target) withDefaults() Target {
	t.Timing = t.Timing.withDefaults()
	if len(t.Declared.Scopes) == 0 {
		t.Declared.Scopes = []string{co.ScopeIndex, co.ScopeNotify}
	}
	t.Events = max(t.Events, 200)
	return t
}

func (t Timing) withDefaults() Timing {
	orDefault(&t.Scale, 1200)
	orDefault(&t.AckWait, 2*time.Minute)
	orDefault(&t.RedeliveryHorizon, 11*time.Minute)
	orDefault(&t.NakDelay, 30*time.Second)
	orDefault(&t.Settle, 5*time.Second)
	orDefault(&t.HandleDeadline, 2*time.Second)
	orDefault(&t.NotifyLatency, 2*time.Millisecond)
	orDefault(&t.ReadLatency, 3*time.Millisecond)
	return t
}

// orDefault sets *p to v when it is not positive (unset).
func orDefault[T int | float64 | time.Duration](p *T, v T) {
	if *p <= 0 {
		*p = v
	}
}
