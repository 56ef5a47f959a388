// Package poll is the kit's one polling loop: call a check until it holds
// or the context ends, backing off between attempts. Rule bodies poll with
// r.Eventually (their Gomega); everything else (readiness waits, metadata
// that lags, a store coming back after a fault) polls with Until.
package poll

import (
	"context"
	"time"
)

// Until calls f until it returns nil or ctx ends, waiting first between the
// first attempts and doubling the wait up to most. It returns nil once f
// succeeded, else f's last error; ctx.Err() then says why it stopped. f
// runs at least once, even on an ended ctx.
func Until(ctx context.Context, first, most time.Duration, f func() error) error {
	delay := first
	for {
		err := f()
		if err == nil {
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, most)
	}
}
