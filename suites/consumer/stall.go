package consumer

import (
	"context"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/stall"
)

// The consumer rules bound their waits in real time (a step settles within
// Timing.Settle, a Handle call returns within HandleDeadline). The kit's
// own process can be paused by its host; such a pause is the kit's, not
// the consumer's, so those bounds count the time the kit was scheduled
// (package stall), held for as long as the rule runs.

// watchKit holds the kit's heartbeat until the rule's cleanups run.
func watchKit(r *spec.R) { r.DeferCleanup(stall.Hold()) }

// attentive polls cond until it holds or d of the kit's scheduled time
// has passed (ctx ends it sooner); it reports whether cond held.
func attentive(ctx context.Context, d, poll time.Duration, cond func() bool) bool {
	// A Gomega of its own that does not end the rule: the caller judges
	// a wait that ran out.
	wait := gomega.NewGomega(func(string, ...int) {})
	start := time.Now()
	for left := d; ; left = d - stall.Scheduled(start, time.Now()) {
		if left <= 0 || ctx.Err() != nil {
			return cond()
		}
		if wait.Eventually(cond).WithContext(ctx).WithTimeout(left).WithPolling(poll).Should(gomega.BeTrue()) {
			return true
		}
	}
}

// overdue says whether a call begun at start has had d of the kit's
// scheduled time; if not, it is what is left.
func overdue(start time.Time, d time.Duration) (bool, time.Duration) {
	left := d - stall.Scheduled(start, time.Now())
	return left <= 0, left
}
