// Package sinks holds what a consumer under test writes its side effects to,
// as the kit provides and observes them: a search index (plain put and a
// conditional, versioned upsert), a notifier that is not idempotent by itself
// but can be queried by key, a durable key-value store for the consumer's own
// de-dupe records that survives restarts, and the scaled clock they all read.
//
// The index and the notifier stand for external systems: they live outside
// any consumer instance, so a crashed instance's effects stay visible, and
// they keep a log of every effect so the kit can count effects per
// (message, version, scope).
package sinks

import (
	"context"
	"time"
)

// Scaled is a clock that runs Scale times faster than real time from a fixed
// epoch. Durations in the contract (a 10-minute record, an 11-minute
// redelivery) are declared in its units and waited for in real time divided
// by Scale. It is not a virtual clock: time only advances as real time does,
// so nothing can jump past an expiry the code under test has not seen.
type Scaled struct {
	Scale float64
	epoch time.Time
	start time.Time
}

// Epoch is where every scaled clock starts, so timelines read alike.
var Epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// NewScaled starts a clock running scale times faster than real time.
func NewScaled(scale float64) *Scaled {
	if scale <= 0 {
		scale = 1
	}
	return &Scaled{Scale: scale, epoch: Epoch, start: time.Now()}
}

// Now is the scaled time.
func (c *Scaled) Now() time.Time {
	return c.epoch.Add(time.Duration(float64(time.Since(c.start)) * c.Scale))
}

// Elapsed is the scaled time since the clock started.
func (c *Scaled) Elapsed() time.Duration { return c.Now().Sub(c.epoch) }

// Real converts a scaled duration to the real time it takes.
func (c *Scaled) Real(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.Scale)
}

// SleepUntil waits (in real time) until the scaled clock reads at least
// epoch+at, or ctx ends.
func (c *Scaled) SleepUntil(ctx context.Context, at time.Duration) error {
	for {
		left := at - c.Elapsed()
		if left <= 0 {
			return nil
		}
		t := time.NewTimer(c.Real(left) + time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
