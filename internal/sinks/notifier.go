package sinks

import (
	"context"
	"sync"
	"time"

	"github.com/onceproof/tck/co"
)

// MemNotifier is the kit's notifier. Latency is how long a send takes, as a
// call to a real push service would; it is what makes a check-then-send race
// between two workers visible, as it would be in production.
type MemNotifier struct {
	clock   co.Clock
	Latency time.Duration
	mu      sync.Mutex
	log     []Effect
}

// NewNotifier returns a notifier with the given per-send latency.
func NewNotifier(clock co.Clock, latency time.Duration) *MemNotifier {
	return &MemNotifier{clock: clock, Latency: latency}
}

// Send implements Notifier. The notification becomes visible when the call
// returns; a send cut short by ctx did not happen.
func (n *MemNotifier) Send(ctx context.Context, msg co.Notification) error {
	if n.Latency > 0 {
		t := time.NewTimer(n.Latency)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.log = append(n.log, Effect{Scope: co.ScopeNotify, MessageID: msg.MessageID, Version: msg.Version, Body: msg.Text, At: n.clock.Now()})
	return nil
}

// Sent implements Notifier.
func (n *MemNotifier) Sent(ctx context.Context, messageID string, version int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, e := range n.log {
		if e.MessageID == messageID && e.Version == version {
			c++
		}
	}
	return c, nil
}

// Effects returns a copy of every notification sent.
func (n *MemNotifier) Effects() []Effect {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Effect(nil), n.log...)
}
