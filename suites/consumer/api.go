package consumer

import (
	"context"
	"time"

	"github.com/onceproof/tck/co"
	"github.com/onceproof/tck/mq"
)

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
}

func (t Timing) withDefaults() Timing {
	if t.Scale <= 0 {
		t.Scale = 1200
	}
	if t.AckWait <= 0 {
		t.AckWait = 2 * time.Minute
	}
	if t.RedeliveryHorizon <= 0 {
		t.RedeliveryHorizon = 11 * time.Minute
	}
	if t.NakDelay <= 0 {
		t.NakDelay = 30 * time.Second
	}
	if t.Settle <= 0 {
		t.Settle = 5 * time.Second
	}
	if t.HandleDeadline <= 0 {
		t.HandleDeadline = 2 * time.Second
	}
	if t.NotifyLatency <= 0 {
		t.NotifyLatency = 2 * time.Millisecond
	}
	return t
}

// Target is what Register needs.
type Target struct {
	// Broker opens a handle on the broker deliveries come from; the kit
	// creates (and deletes) its own topics on it.
	Broker func(ctx context.Context) (mq.Broker, error)
	// New builds consumer instances.
	New      co.Factory
	Declared co.Declared
	// Outbox, when set, is the writer and relay CO-4.1 crashes.
	Outbox co.Outbox
	Timing Timing
	// Seed seeds the CO-5.1 schedule (0: from the time; the seed is in the evidence).
	Seed int64
	// Events is the size of the CO-5.1 schedule (default and minimum 200).
	Events int
	// Timeout bounds each rule (default spec.DefaultTimeout).
	Timeout time.Duration
}
